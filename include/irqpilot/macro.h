/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_MACRO_H
#define IRQPILOT_MACRO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _warn_unused_ __attribute__((warn_unused_result))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                          \
	({                                   \
		__typeof__(p) _tp_ = (p);    \
		(p) = NULL;                  \
		_tp_;                        \
	})

#define TAKE_FD(fd)                  \
	({                           \
		int _tf_ = (fd);     \
		(fd) = -1;           \
		_tf_;                \
	})

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
