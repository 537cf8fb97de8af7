/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_ROOT_H
#define IRQPILOT_ROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Every file irqpilot reads or writes is named relative to one root
 * directory, so that the same code runs on the live machine ("/"), on a
 * fixture tree and on a replay step.
 *
 * Paths are given relative to the root ("proc/interrupts"); a leading '/'
 * is accepted and ignored. Symbolic links inside the tree are followed.
 * Trees that were copied by tools that do not keep symlinks store a link as
 * a small regular file holding the link's target; such "flattened" links
 * are followed too, both in the middle of a path and by ip_root_readlink().
 *
 * All functions return 0 (or a length) on success and a negative errno on
 * failure; they never print.
 */
struct ip_root;

/*
 * For --capture: told of every successful read, readlink and listdir, with
 * what was returned, so the capture holds exactly what the model saw.
 */
enum ip_root_event_kind { IP_ROOT_EV_READ, IP_ROOT_EV_LINK, IP_ROOT_EV_DIR };
struct ip_root_event {
	enum ip_root_event_kind kind;
	const char *path; /* normalised, relative to the root */
	const char *data; /* READ: content; LINK: target */
	size_t len;
	mode_t mode; /* READ: the file's permission bits */
};
typedef void (*ip_root_recorder)(void *ctx, const struct ip_root_event *ev);

int ip_root_open(const char *dir, struct ip_root **out);
/* A root whose links never resolve out of @dir (an absolute target from
 * its top, ".." stopping there): for a replay step, which is untrusted. */
int ip_root_open_confined(const char *dir, struct ip_root **out);
void ip_root_free(struct ip_root *r);
const char *ip_root_dir(const struct ip_root *r);
bool ip_root_is_live(const struct ip_root *r);
/* opened by ip_root_open_confined(): a replay step */
bool ip_root_is_confined(const struct ip_root *r);
void ip_root_set_recorder(struct ip_root *r, ip_root_recorder fn, void *ctx);
/* A recorder is set: every read must reach the tree, none be cached. */
bool ip_root_recording(const struct ip_root *r);

/* Whole file, NUL-terminated; *len excludes the NUL. Files over @max bytes
 * give -EFBIG so a garbled or hostile tree cannot exhaust memory. */
#define IP_ROOT_READ_MAX (64u << 20)
int ip_root_read(struct ip_root *r, const char *path, char **out, size_t *len);
/*
 * The same for a single-value file: a /proc/irq/N/ or /proc/PID/ file or
 * a sysfs attribute, which the kernel hands over whole on the first read.
 * Not for files listing many records (/proc/interrupts, /proc/softirqs,
 * /proc/diskstats), where a short read is not the end.
 */
int ip_root_read_attr(struct ip_root *r, const char *path, char **out, size_t *len);
/*
 * Reads @path a chunk of whole lines at a time, for files too big to hold
 * (a 1,024-CPU machine's /proc/interrupts is ~90 MB): @fn gets runs of
 * complete lines (the last one may lack its newline), numbered from
 * @first_lineno. A line longer than the chunk is read whole. Returns what
 * @fn returned if negative.
 */
typedef int (*ip_root_lines_fn)(void *ctx, const char *text, size_t len, int first_lineno);
int ip_root_read_lines(struct ip_root *r, const char *path, ip_root_lines_fn fn, void *ctx);

/*
 * An fd (O_RDONLY | O_CLOEXEC) of @path below the root, following real and
 * flattened links as every read does, for a caller that keeps it open and
 * re-reads it with pread(fd, ..., 0): no recorder sees those reads, so it
 * must not be used while ip_root_recording(). Close it with close(2).
 */
int ip_root_open_read(struct ip_root *r, const char *path);

/*
 * ip_root_read() (@attr: ip_root_read_attr()) of a file read every cycle
 * (/proc/diskstats, an IRQ thread's /proc/PID/stat, the isolation lists):
 * the fd is kept open and read again with pread() from offset 0, one or
 * two syscalls instead of three or four. seq_file (fs/seq_file.c,
 * seq_read_iter()) shows the file afresh whenever it is asked for offset
 * 0, and kernfs attributes are seq_files (fs/kernfs/file.c). A kept
 * /proc/PID/ fd of a task that is gone reads ESRCH (fs/proc/base.c,
 * proc_single_show() and comm_show(): get_pid_task() fails), never a new
 * task given the PID; then, and on ENODEV or EIO, the file is opened by
 * name once more. Below a tree other than the live root, fixtures replace
 * a file by rename or remove it: a kept inode left with no name (its
 * watch fired, ip_root_notice_replaced(), or else fstat(), st_nlink 0) is
 * dropped and the file read by name. A directory renamed
 * aside keeps its files' names, so a tree's kept fds are looked up by
 * name again by ip_root_lookup_again(), which the sampler calls at each
 * full scan.
 * While recording it reads by name. At most an eighth of RLIMIT_NOFILE is
 * kept; past it files are read by name.
 */
int ip_root_read_again(struct ip_root *r, const char *path, bool attr, char **out, size_t *len);
/*
 * Below a tree: the kept files a fixture replaced or removed since the
 * last call (an inotify watch on each, IN_ATTRIB when its link count
 * changes) are closed, to be read by name. The sampler calls it before
 * each sample and probe; until the first call, and where inotify is not to
 * be had, each read of a kept file asks fstat() instead. The live root's
 * files are never replaced: nothing to do.
 */
void ip_root_notice_replaced(struct ip_root *r);
/* Every name is looked up again, the sampler's full scan: the files
 * ip_root_read_optional() found missing (ip_root_recheck_absent()), and,
 * below a tree, each kept fd whose name now leads to another file (or
 * none) is closed; the live root's kept fds fail once their file is gone
 * (above). */
void ip_root_lookup_again(struct ip_root *r);
/* Whether @path still leads to the file of device @dev, inode @ino (taken
 * by fstat() of an fd opened by that name): a lookup, for a caller's own
 * kept fds below a tree, as ip_root_lookup_again() does for the root's. */
bool ip_root_names(struct ip_root *r, const char *path, dev_t dev, ino_t ino);

/*
 * ip_root_read_again() of a file a root may lack for good: a fixture's
 * irqpilot/ files (the recorded clock and counts), a newer kernel's file
 * (cgroup's cpuset.cpus.isolated, 6.7+). -ENOENT is remembered and
 * answered without a lookup until ip_root_recheck_absent(), which the
 * sampler calls at each idle probe, and ip_root_lookup_again() at each
 * full scan: on tmpfs, kernfs and procfs a failed lookup allocates and
 * frees a dentry and a file, 10% of the bench's 8-CPU steady cycle for
 * four such files. While recording it asks each time.
 */
int ip_root_read_optional(struct ip_root *r, const char *path, bool attr, char **out, size_t *len);
void ip_root_recheck_absent(struct ip_root *r);
/* ip_root_read_long() of such a file. */
int ip_root_read_long_optional(struct ip_root *r, const char *path, long long *out);

/* First line without its newline, of a single-value file (read as
 * ip_root_read_attr() does). */
int ip_root_read_line(struct ip_root *r, const char *path, char **out);
/* The same through a kept fd, for a file read every cycle (ip_root_read_again()). */
int ip_root_read_line_again(struct ip_root *r, const char *path, char **out);
/* A single-value file holding one decimal integer (leading/trailing
 * blanks allowed). */
int ip_root_read_long(struct ip_root *r, const char *path, long long *out);
int ip_root_readlink(struct ip_root *r, const char *path, char **target);
/* Path after following every link, relative to the root, without '..'. */
int ip_root_resolve(struct ip_root *r, const char *path, char **out);
int ip_root_stat(struct ip_root *r, const char *path, struct stat *st);
bool ip_root_exists(struct ip_root *r, const char *path);
/* Sorted entry names, without "." and "..". Free with ip_strv_free(). */
int ip_root_listdir(struct ip_root *r, const char *path, char ***names, size_t *n);
/* Writes @data to an existing file with one write(2). Returns the errno
 * of open() or write() exactly, since callers classify it. */
/* An flock on proc/irq under @r in *@fd, held while it is open: whoever
 * changes the IRQs under @r holds it, whatever its runtime directory. On
 * the live root it is machine-wide (one procfs per pid namespace). 0 with
 * *@fd -1 when there is no proc/irq; -EWOULDBLOCK when another holds it;
 * 1 with *@fd -1 when only processes of other users (not root's, not
 * ours) hold it: they cannot be an irqpilotd writing these IRQs. */
int ip_root_lock_irqs(struct ip_root *r, int *fd);
int ip_root_write(struct ip_root *r, const char *path, const char *data);

/* Reproduce @ev under @dest_dirfd: every symlink met on the way to its
 * path in @r is recreated as a symlink, then the file, link or directory
 * itself, with its mode. For --capture. */
int ip_root_mirror(struct ip_root *r, const struct ip_root_event *ev, int dest_dirfd);

void ip_strv_free(char **v, size_t n);

/*
 * @v[0..n) into @buf (@size bytes), each after @prefix, @sep between them
 * and @last before the last: ("a", "b", "c") with ", ", " or ", "/" gives
 * "/a, /b or /c". Cut short where it does not fit; "" for none. Returns @buf.
 */
const char *ip_join(char *buf, size_t size, const char *const *v, size_t n, const char *sep,
		    const char *last, const char *prefix);

/* printf into a malloc()ed string; NULL on ENOMEM. */
char *ip_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
