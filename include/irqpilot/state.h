/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_STATE_H
#define IRQPILOT_STATE_H

#include <stddef.h>

#include "irqpilot/diag.h"
#include "irqpilot/apply.h"
#include "irqpilot/root.h"

/*
 * The original settings of everything irqpilotd changed, kept in a file
 * under the runtime directory so that `irqpilotd --restore` can put them
 * back after a crash or kill -9, when the daemon's memory is gone.
 *
 *   # irqpilot state 2
 *   # boot 6f1a3c1e-0d7b-4a0e-9d43-2b7c9a4c1f00   (ip_state_set_boot())
 *   irq 45 0-3 chip=PCI-MSIX-0000:00:02.0 hwirq=1-edge actions=nvme0q1
 *   irq 46 0-3        (written before identities were kept)
 *   thread 812 28 4711 irq/28-ahci affinity 0-3
 *   thread 812 28 4711 irq/28-ahci sched 1 50
 *   rq sda 1
 *   cq sda 8:0        (attached to irqpilot_cq by us: detached on restore)
 *
 * An irq line may name the vector its original is of (struct
 * ip_irq_ident: chip, hwirq and actions as its /proc/interrupts line
 * showed them), all three or none; restore does not write it onto a line
 * that shows another vector. A line without them is restored as before.
 * A thread line names pid, IRQ, start time (field 22 of /proc/PID/stat)
 * and comm. In both, every byte outside '!'..'~' and '\' is written as
 * \xHH (an empty identity field is just "chip=").
 *
 * The identity did not change the version. A version says what the
 * records mean, for a reader that would take another version's records
 * for its own (1 recorded after the write). An irq record means what it
 * did; a reader of version 2 from before refuses the longer line as not
 * a record (it checks the number of fields), so it cannot misread one: its
 * --restore sets the file aside and still restores the threads, rq and
 * cq records, where a new version would have had it restore nothing.
 *
 * The file is written ahead: an original is on disk, fsync'd, before the
 * first write to its object (struct ip_apply_ops.record). It is replaced
 * atomically (an O_EXCL|O_NOFOLLOW temporary file, fsync, rename, fsync of
 * the directory) inside a runtime directory that must be owned by the
 * daemon's euid and not group- or world-writable. It is never followed
 * through a symbolic link, and a file with records that do not parse is
 * never deleted: --restore keeps it aside under a timestamped name. A
 * "# irqpilot state N" header with N other than 2 is such a record, and
 * no line after it is read.
 */

#define IP_STATE_NAME "state"
/* Above any IRQ_BITMAP_BITS (NR_IRQS + 8196; the largest NR_IRQS, x86
 * with 8192 CPUs, is 64 * 8192 + 256). */
#define IP_STATE_IRQ_MAX (1u << 20)
/* PID_MAX_LIMIT (include/linux/threads.h), when pid_max cannot be read. */
#define IP_STATE_PID_LIMIT 4194304L

/* A record that did not parse or was out of range: kept, never dropped. */
struct ip_state_bad {
	int lineno;
	char why[96];
	char text[96]; /* the start of the line, for the message */
};

/* The first IP_STATE_BADS_KEPT bad lines are kept with their text; the
 * rest are only counted. A file of garbage (up to the 16 MiB read) has
 * millions of lines: keeping and logging each one took hours and
 * gigabytes before the daemon or --restore said anything. */
#define IP_STATE_BADS_KEPT 64

struct ip_state_bads {
	size_t n;    /* every line that is not a valid record */
	size_t kept; /* the first of them, in v[] */
	struct ip_state_bad *v;
};

void ip_state_bads_free(struct ip_state_bads *b);

/*
 * Pure: adds the records of @text to @o and every line that is not a
 * valid record to @bad. Pids must be below @pid_max. Returns 0 or -ENOMEM.
 */
int ip_state_parse(const char *text, size_t len, long pid_max, struct ip_originals *o,
		   struct ip_state_bads *bad);

/* /proc/sys/kernel/pid_max under @r, or IP_STATE_PID_LIMIT. */
long ip_state_pid_max(struct ip_root *r);

/*
 * Opens directory @dir for root to write in, refusing a symbolic link or
 * anything but a directory (-ELOOP) and a directory that is not the euid's
 * own or that anyone else may write (-EPERM): whoever may write there can
 * plant a link under a name root then writes (truncating or creating a
 * file it names), or swap a file root later trusts. @what names what the
 * directory is for ("the runtime directory"), for @d's message. Returns
 * the fd, O_CLOEXEC. The runtime directory and the capture directories
 * are checked alike, so they are refused in the same words.
 */
int ip_open_own_dir(const char *dir, const char *what, struct ip_diag *d);

struct ip_state;

/* Opens the runtime directory @dir, refusing a symbolic link, a directory
 * owned by another user or one that is group- or world-writable. */
int ip_state_open(const char *dir, struct ip_state **out, struct ip_diag *d);
void ip_state_close(struct ip_state *s);
/* DIR/state, for messages. */
const char *ip_state_path(const struct ip_state *s);
/* The runtime directory ip_state_open() checked, for the files beside the
 * state file (the daemon's lock) to be opened in it and nowhere else. */
int ip_state_dirfd(const struct ip_state *s);

/* The boot the originals are of: the text of
 * /proc/sys/kernel/random/boot_id. A file saved with one names it in a
 * comment, "# boot ID" (a reader without this skips it), and a file that
 * names another is not loaded: a reboot put its settings back already.
 * NULL or "": not known (a fixture tree), nothing checked. */
void ip_state_set_boot(struct ip_state *s, const char *boot_id);
/* ip_state_set_boot() of proc/sys/kernel/random/boot_id under @r, or of
 * none when it cannot be read or is no UUID. */
void ip_state_boot_of(struct ip_state *s, struct ip_root *r);
/* The root the originals are of (ip_root_dir()): a file saved with one
 * names it, "# root PATH" (escaped like a record's names), and one that
 * names another is not loaded: its IRQ numbers and CPU lists are another
 * tree's (a fixture's, or this machine's seen from a fixture). NULL: not
 * known, nothing checked. -ENOMEM, else 0. */
int ip_state_set_root(struct ip_state *s, const char *root);

/* Adds the recorded originals to @o, the lines that are not valid records
 * to @bad. -ENOENT when there is no file; an error for a link, a file not
 * owned by the euid or writable by others; -ESTALE for a file of another
 * boot (ip_state_set_boot()), -EXDEV of another root (ip_state_set_root()),
 * with @d saying which. */
int ip_state_load(struct ip_state *s, long pid_max, struct ip_originals *o, struct ip_state_bads *bad,
		  struct ip_diag *d);

/* Replaces the file with the originals in @o (fsync'd), or removes it
 * when nothing is recorded. Does nothing when the file already holds
 * exactly that; 1, with @d saying so, when it held that but was since
 * changed or removed by someone else and is written again. */
int ip_state_save(struct ip_state *s, const struct ip_originals *o, struct ip_diag *d);

/* Links the state file as "state.invalid-YYYYmmddTHHMMSS" (UTC), never
 * over an existing file; *@aside gets the new path. The state file itself
 * stays, for ip_state_save() to replace with the valid records: removed
 * here, a --restore stopped before its last save left none, and the
 * next found nothing to restore. */
int ip_state_set_aside(struct ip_state *s, char **aside, struct ip_diag *d);

/* An ip_apply_ops.record: ip_state_save() of @ctx, an ip_state. */
int ip_state_record(void *ctx, const struct ip_originals *o);

#endif
