/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_WATCH_H
#define IRQPILOT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "irqpilot/diag.h"

struct ip_root;

/*
 * Being told when files below a root change, instead of reading them on
 * a timer: an inotify fd that becomes readable when one of the files is
 * written, replaced by a rename, created or removed.
 *
 * Only a tree whose files something writes through the VFS can be watched:
 * a --root fixture on tmpfs or ext4 that a test or a stand-in kernel
 * rewrites. The kernel's own /proc, /sys and cgroup files change without
 * telling fsnotify (a seq_file is made afresh at each read), so the live
 * root, and any watched directory that resolves to procfs, sysfs, cgroupfs,
 * debugfs or tracefs, is -EOPNOTSUPP with the reason in the diag. There
 * the daemon waits on perf or reads the files on a timer (idle.h).
 *
 * Each file's directory is watched (a rename over the file is an event
 * of the directory's), resolved as every read below the root is. A
 * directory that does not exist yet is waited for in its nearest existing
 * ancestor, and the watches are made again once it appears.
 */
struct ip_watch;

int ip_watch_open(struct ip_root *r, const char *const *paths, int n, struct ip_watch **out, struct ip_diag *d);
void ip_watch_free(struct ip_watch *w);
int ip_watch_fd(const struct ip_watch *w);

/*
 * Reads every event queued so far, without waiting: 1 when one of the
 * files (or a directory on the way to one) changed since the last call,
 * or the kernel's queue overflowed and events were lost; 0 when nothing
 * of theirs did; a negative errno when the watch could not be read or
 * made again.
 */
int ip_watch_changed(struct ip_watch *w, struct ip_diag *d);

/*
 * While the daemon samples on its timer it does not wait on the watch,
 * and every write to the tree queued events that had to be read and freed
 * each cycle (8% of a steady 8-CPU tree's cycle): ip_watch_pause()
 * removes the watches and drops what was queued; ip_watch_changed() is 0
 * meanwhile. ip_watch_resume() makes them again: 1 when it did, 0 when
 * the watch was not paused, a negative errno when a directory could not be
 * watched. A change between the caller's last read and the resume is not
 * in the queue: the caller reads once more after it.
 */
void ip_watch_pause(struct ip_watch *w);
int ip_watch_resume(struct ip_watch *w, struct ip_diag *d);

/*
 * What no watch saw: whether one of @paths (below @r) was written since
 * @since_ns (CLOCK_REALTIME), by its ctime, which a write, a rename over
 * it and a change of its times all set, and which no one can set back (a
 * copy that kept its mtime, cp -p and a rename, still has a new ctime).
 * Made up to IP_WATCH_CTIME_SLACK_NS before @since_ns counts as written:
 * the VFS stamps with the coarse clock (current_time(), fs/inode.c), up
 * to a tick behind CLOCK_REALTIME. A missing file was not written; one
 * that cannot be looked at (another errno) may have been.
 */
#define IP_WATCH_CTIME_SLACK_NS (100 * 1000000LL)
bool ip_watch_written_since(struct ip_root *r, const char *const *paths, int n, int64_t since_ns);

#endif
