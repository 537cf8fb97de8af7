// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A deliberately bad control client for the integration tests: sends the
 * bytes of argv[2] (or N junk bytes with "--junk N", or nothing and just
 * holds the connection with "--hold SECONDS") to the socket argv[1], and
 * prints whatever comes back. "--hold-many N SECONDS [EXPECT]" opens N
 * connections, says "connected N" once all are made, holds them idle, and
 * prints how many the daemon left open, "open: K of N": after SECONDS, or as
 * soon as EXPECT are left, holding them on until SECONDS are up. Waiting for
 * EXPECT judges the daemon by what it did, however slowly it runs (ASan on a
 * loaded machine took longer than a fixed 4 s to accept and refuse 64).
 * "--then FILE TEXT" asks for status, then sends TEXT on the same
 * connection once FILE exists, printing both replies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A connection the daemon closed reads as the end (0) at once; an open
 * one has nothing to read (EAGAIN). */
static int count_open(const int *fds, int n)
{
	int open_ = 0;
	char c;

	for (int i = 0; i < n; i++)
		open_ += recv(fds[i], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
	return open_;
}

static int hold_many(const char *path, int n, unsigned seconds, int expect)
{
	int *fds = calloc((size_t)n, sizeof(int)), open_;
	time_t end = time(NULL) + (time_t)seconds;

	if (!fds)
		return 1;
	for (int i = 0; i < n; i++) {
		fds[i] = dial(path);
		if (fds[i] < 0) {
			perror("connect");
			return 3;
		}
	}
	printf("connected %d\n", n);
	fflush(stdout);
	for (;;) {
		open_ = count_open(fds, n);
		if ((expect >= 0 && open_ == expect) || time(NULL) >= end)
			break;
		usleep(50 * 1000);
	}
	printf("open: %d of %d\n", open_, n);
	fflush(stdout);
	while (time(NULL) < end)
		sleep(1);
	return 0;
}

/* One request and its reply on @fd, printed; 1 if either failed. */
static int ask(int fd, const char *text)
{
	static char buf[1 << 20];
	ssize_t n;

	if (send(fd, text, strlen(text), 0) < 0) {
		perror("send");
		return 1;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		perror("recv");
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	fflush(stdout);
	return 0;
}

/* "--then FILE TEXT": a status first, so the daemon has taken the
 * connection and judged its peer; then, once FILE exists (60 s at most),
 * TEXT on the same connection. */
static int then(int fd, const char *file, const char *text)
{
	if (ask(fd, "v1 status"))
		return 1;
	for (int i = 0; i < 1200 && access(file, F_OK) < 0; i++)
		usleep(50 * 1000);
	return ask(fd, text);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	static char buf[1 << 20];
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((argc == 5 || argc == 6) && strcmp(argv[2], "--hold-many") == 0)
		return hold_many(argv[1], atoi(argv[3]), (unsigned)atoi(argv[4]), argc == 6 ? atoi(argv[5]) : -1);
	if ((argc != 3 && argc != 4 && argc != 5) || (argc == 5 && strcmp(argv[2], "--then") != 0)) {
		fprintf(stderr, "usage: ctl-raw SOCKET TEXT | ctl-raw SOCKET --junk N | ctl-raw SOCKET --hold S | ctl-raw SOCKET --hold-many N S [EXPECT] | ctl-raw SOCKET --then FILE TEXT\n");
		return 2;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		return 3;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (argc == 5)
		return then(fd, argv[3], argv[4]);
	if (strcmp(argv[2], "--hold") == 0 && argc == 4) {
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (strcmp(argv[2], "--junk") == 0 && argc == 4) {
		len = (size_t)atol(argv[3]);
		if (len > sizeof(buf))
			len = sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(i * 131 + 7);
	} else {
		len = strlen(argv[2]);
		memcpy(buf, argv[2], len);
	}
	if (send(fd, buf, len, 0) < 0) {
		perror("send");
		return 1;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		perror("recv");
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	/* the daemon cuts a bad client off: the next read sees the end */
	n = recv(fd, buf, sizeof(buf), 0);
	printf("after: %s\n", n == 0 ? "closed" : n < 0 ? strerror(errno) : "more data");
	return 0;
}
