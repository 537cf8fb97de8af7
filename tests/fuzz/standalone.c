// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A libFuzzer stand-in so that every fuzz target also runs under plain gcc
 * in make check: it replays a corpus directory, then feeds deterministic
 * mutations of it. Usage: fuzz_X CORPUS_DIR [ITERATIONS]
 *
 * Each input is passed in a buffer of exactly its size, so an overread of
 * text[len] is caught by ASan (or valgrind) when the build has it.
 */
#include <stdint.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef IP_LIBFUZZER

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_MAX_INPUT (1 << 20)

struct input {
	uint8_t *data;
	size_t size;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: fixed seed, so a failure reproduces run after run */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t rndn(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static int run_one(const uint8_t *data, size_t size)
{
	/* a private copy of exactly @size bytes, never NUL-terminated */
	uint8_t *p = malloc(size ? size : 1);

	if (!p)
		return -ENOMEM;
	if (size)
		memcpy(p, data, size);
	LLVMFuzzerTestOneInput(p, size);
	free(p);
	return 0;
}

static int load_corpus(const char *dir, struct input **out, size_t *n)
{
	struct input *v = NULL;
	struct dirent *de;
	size_t cnt = 0;
	DIR *dp;

	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((de = readdir(dp))) {
		char path[4096];
		struct stat st;
		struct input *nv;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > FUZZ_MAX_INPUT)
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[cnt].size = st.st_size;
		v[cnt].data = malloc(st.st_size ? st.st_size : 1);
		f = fopen(path, "rb");
		if (!v[cnt].data || !f ||
		    fread(v[cnt].data, 1, st.st_size, f) != (size_t)st.st_size) {
			if (f)
				fclose(f);
			free(v[cnt].data);
			continue;
		}
		fclose(f);
		cnt++;
	}
	closedir(dp);
	*out = v;
	*n = cnt;
	return 0;
}

/* Pieces that hit the parsers' edges: overflow, separators, junk bytes. */
static const char *const tokens[] = {
	"18446744073709551615",
	"18446744073709551616",
	"99999999999999999999999999",
	"4294967295",
	"4294967296",
	"2147483648",
	"-1",
	"-9223372036854775809",
	"1023",
	"1024",
	"0",
	"\n",
	"\n\n",
	" ",
	"\t",
	":",
	",",
	", ",
	"-",
	"(",
	")",
	") (",
	"CPU",
	"CPU1023",
	"CPU99999",
	"Edge",
	"Level",
	"cpu",
	"BLOCK:",
	"PPid:",
	"Cpus_allowed_list:\t",
	"read_bytes: ",
	"\0",
	"\xff",
	"\r",
};

static size_t mutate(uint8_t *buf, size_t size, size_t cap, const struct input *corpus,
		     size_t ncorpus)
{
	int rounds = 1 + (int)rndn(4);

	for (int k = 0; k < rounds; k++) {
		size_t pos = rndn(size + 1);

		switch (rndn(7)) {
		case 0: /* bit flip */
			if (size)
				buf[rndn(size)] ^= (uint8_t)(1u << rndn(8));
			break;
		case 1: /* truncate */
			size = rndn(size + 1);
			break;
		case 2: /* insert a random byte */
			if (size < cap) {
				memmove(buf + pos + 1, buf + pos, size - pos);
				buf[pos] = (uint8_t)rnd();
				size++;
			}
			break;
		case 3: /* delete a run of bytes */
			if (size) {
				size_t n;

				if (pos >= size)
					pos = size - 1;
				n = 1 + rndn(size - pos < 16 ? size - pos : 16);
				memmove(buf + pos, buf + pos + n, size - pos - n);
				size -= n;
			}
			break;
		case 4:
		case 5: { /* splice a token */
			const char *t = tokens[rndn(sizeof(tokens) / sizeof(tokens[0]))];
			size_t n = t[0] ? strlen(t) : 1;

			if (size + n <= cap) {
				memmove(buf + pos + n, buf + pos, size - pos);
				memcpy(buf + pos, t, n);
				size += n;
			}
			break;
		}
		case 6: { /* splice a slice of another input */
			const struct input *o = &corpus[rndn(ncorpus)];
			size_t from = rndn(o->size + 1), n = rndn(o->size - from + 1);

			if (n > cap - size)
				n = cap - size;
			memmove(buf + pos + n, buf + pos, size - pos);
			memcpy(buf + pos, o->data + from, n);
			size += n;
			break;
		}
		}
	}
	return size;
}

int main(int argc, char **argv)
{
	struct input *corpus = NULL;
	long iterations = 20000;
	size_t ncorpus = 0, cap = 4096;
	uint8_t *buf;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [ITERATIONS]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		iterations = strtol(argv[2], NULL, 10);
	r = load_corpus(argv[1], &corpus, &ncorpus);
	if (r < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(-r));
		return 2;
	}
	if (ncorpus == 0) {
		fprintf(stderr, "%s: %s: no corpus files\n", argv[0], argv[1]);
		return 2;
	}
	for (size_t i = 0; i < ncorpus; i++) {
		run_one(corpus[i].data, corpus[i].size);
		if (corpus[i].size * 2 + 256 > cap)
			cap = corpus[i].size * 2 + 256;
	}
	buf = malloc(cap);
	if (!buf)
		return 2;
	for (long it = 0; it < iterations; it++) {
		const struct input *in = &corpus[rndn(ncorpus)];
		size_t size = in->size;

		memcpy(buf, in->data, size);
		size = mutate(buf, size, cap, corpus, ncorpus);
		run_one(buf, size);
	}
	printf("%s: %zu corpus inputs, %ld mutations, no crash\n", argv[0], ncorpus, iterations);
	for (size_t i = 0; i < ncorpus; i++)
		free(corpus[i].data);
	free(corpus);
	free(buf);
	return 0;
}

#endif
