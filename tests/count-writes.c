// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Counts the writes to files of a fixture tree, for the closed-loop tests:
 * "count-writes FILE..." prints "watching" once every watch is set, then
 * the name of a FILE each time a writer closes it (inotify IN_CLOSE_WRITE),
 * until killed. A write of the same text as before leaves the content as
 * it was, so only the close tells that the daemon wrote; polling mtimes
 * could merge two writes in one tick and miss one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int fd = inotify_init1(IN_CLOEXEC), wd[64];

	if (fd < 0 || argc < 2 || argc - 1 > (int)(sizeof(wd) / sizeof(wd[0]))) {
		fprintf(stderr, "usage: count-writes FILE... (at most 64): %s\n",
			fd < 0 ? strerror(errno) : "bad arguments");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		wd[i - 1] = inotify_add_watch(fd, argv[i], IN_CLOSE_WRITE);
		if (wd[i - 1] < 0) {
			fprintf(stderr, "count-writes: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	}
	printf("watching\n");
	fflush(stdout);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "count-writes: read: %s\n", n < 0 ? strerror(errno) : "end of file");
			return 1;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			for (int i = 0; i < argc - 1; i++)
				if (wd[i] == ev->wd && (ev->mask & IN_CLOSE_WRITE))
					printf("%s\n", argv[i + 1]);
			if (ev->mask & IN_Q_OVERFLOW)
				printf("overflow\n");
			p += sizeof(*ev) + ev->len;
		}
		fflush(stdout);
	}
}
