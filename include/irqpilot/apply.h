/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_APPLY_H
#define IRQPILOT_APPLY_H

/*
 * act: the only code that changes the system. It writes a plan's IRQ
 * affinities, IRQ thread affinities and priorities and rq_affinity, reads
 * back where the kernel really put each vector, sorts every failure into
 * what it means for the next cycle, and remembers the original settings
 * so that they can be restored. It never words anything: each action
 * gives a result record (what, outcome, detail and the values behind
 * them), which report.c alone turns into text (ip_report_apply_line()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/policy.h"
#include "irqpilot/root.h"

/* ---- originals: what restore puts back ------------------------------ */

/*
 * Every setting irqpilotd changed, as it was before its first change. One
 * owner: ip_apply() adds an original before the first write to its object
 * (and makes it durable first, through ops->record), ip_apply_restore()
 * writes them back and drops what it restored, and state.h persists and
 * loads them. The policy never sees them.
 */
struct ip_irq_orig {
	unsigned irq;
	char *list; /* smp_affinity_list before our first write, owned */
	/* The vector it is of, as its line showed when the original was
	 * taken: another vector given the number since is not written with
	 * it. Nothing known in a record of an older state file. */
	struct ip_irq_ident id;
};

/* A thread is pid + comm + start time (field 22 of /proc/PID/stat): once
 * an IRQ thread exits its pid may be reused, and restore must then leave
 * the new process alone. */
struct ip_thread_orig {
	pid_t pid;
	unsigned irq;
	char comm[64];
	uint64_t start;
	bool have_affinity, have_sched;
	ip_cpuset allowed;
	int policy, priority;
};

struct ip_rq_orig {
	char device[32];
	int value;
};

/* A device we attached to irqpilot_cq: detached again on restore. */
struct ip_cq_orig {
	char device[32];
	unsigned major, minor;
};

struct ip_originals {
	size_t nr_irqs;
	struct ip_irq_orig *irqs; /* sorted by irq */
	size_t nr_threads;
	struct ip_thread_orig *threads; /* sorted by pid, start, comm */
	size_t nr_rq;
	struct ip_rq_orig *rq; /* sorted by device */
	size_t nr_cq;
	struct ip_cq_orig *cq; /* sorted by device */
	/* Room in each array, which grows by doubling (0: as many as
	 * there are records, in a view that only drops them) */
	size_t cap_irqs, cap_threads, cap_rq, cap_cq;
};

void ip_originals_init(struct ip_originals *o);
void ip_originals_free(struct ip_originals *o);
/* Records of every kind: IRQs, threads, rq_affinity, irqpilot_cq. */
size_t ip_originals_count(const struct ip_originals *o);
bool ip_originals_empty(const struct ip_originals *o);
/* The recorded smp_affinity_list of @irq, or NULL. */
const char *ip_originals_irq(const struct ip_originals *o, unsigned irq);
/* Records @list for @irq unless one is recorded (the first one is the
 * original). 0, or -ENOMEM. */
int ip_originals_add_irq(struct ip_originals *o, unsigned irq, const char *list);
/* The same with the identity of the vector (NULL: not known). */
int ip_originals_add_irq_id(struct ip_originals *o, unsigned irq, const char *list,
			    const struct ip_irq_ident *id);
/* The recorded identity of @irq's vector, or NULL when nothing is recorded. */
const struct ip_irq_ident *ip_originals_irq_id(const struct ip_originals *o, unsigned irq);
void ip_originals_drop_irq(struct ip_originals *o, unsigned irq);
/* The thread pid + start + comm, created empty (nothing to restore) if it
 * is not recorded; NULL on ENOMEM. */
struct ip_thread_orig *ip_originals_thread(struct ip_originals *o, pid_t pid, unsigned irq,
					   const char *comm, uint64_t start);
/* Whether sched_setscheduler() can set @policy with @priority, so that
 * restore can put it back (the state file's reader takes no other). */
bool ip_thread_sched_ok(int policy, int priority);
/* The order of ip_originals.threads: pid, start time, comm. */
int ip_thread_orig_cmp(const struct ip_thread_orig *a, const struct ip_thread_orig *b);
/* Records rq_affinity @value of @device unless one is; 1 when added, 0
 * when one was recorded already, -ENOMEM. */
int ip_originals_add_rq(struct ip_originals *o, const char *device, int value);
/* Whether an rq_affinity original of @device is recorded. */
bool ip_originals_rq(const struct ip_originals *o, const char *device);
const struct ip_cq_orig *ip_originals_cq(const struct ip_originals *o, const char *device);
int ip_originals_add_cq(struct ip_originals *o, const char *device, unsigned major, unsigned minor);
void ip_originals_drop_cq(struct ip_originals *o, const char *device);

/*
 * Everything that writes goes through these, so tests can inject failures
 * and never touch the real scheduler. Each returns 0 or a negative errno.
 */
struct ip_apply_ops {
	int (*write)(void *ctx, struct ip_root *r, const char *path, const char *data);
	int (*set_affinity)(void *ctx, pid_t pid, const ip_cpuset *cpus);
	int (*set_scheduler)(void *ctx, pid_t pid, int policy, int priority);
	/* irqpilot_cq ATTACH (@attach) or DETACH of a whole disk; NULL: no
	 * module support, every attach fails with -ENOTSUP. */
	int (*cq)(void *ctx, unsigned major, unsigned minor, bool attach);
	void *ctx;
	/* Write-ahead: makes the originals in @o durable (the state file,
	 * fsync'd). Called when an original was added, before the write it
	 * guards; when it fails, that write is not made. NULL: nothing to
	 * persist (tests, --oneshot). */
	int (*record)(void *record_ctx, const struct ip_originals *o);
	void *record_ctx;
};

/* ip_root_write, sched_setaffinity(2), sched_setscheduler(2), and the
 * irqpilot_cq netlink client (cqclient.h). ctx is NULL, or a struct
 * ip_apply_live. */
void ip_apply_ops_default(struct ip_apply_ops *ops);

struct ip_cq;
/*
 * The real ops' context. @cq is the caller's long-lived irqpilot_cq
 * connection (irqpilotd's, the one it follows events on), or NULL. On it
 * an attach is IP_CQ_ATTACH_OWNED: the module detaches the disk itself
 * when that socket closes, so a daemon killed with -9 leaves nothing
 * attached. While @cq is NULL (the module loaded after the daemon, a
 * failed events socket) an attach is -ENOTCONN, planned again next cycle,
 * so the daemon never makes one that outlives it. With ctx NULL
 * (--oneshot) each call opens a socket of its own and attaches unowned,
 * since an owned attach would be undone the moment that socket closed
 * (--oneshot's plan would be false as printed); such an attach stays, as
 * --oneshot's affinity writes do, until a detach or the module's unload.
 * A detach without @cq goes out on a socket of its own.
 */
struct ip_apply_live {
	struct ip_cq *cq;
};

enum ip_apply_what {
	IP_APPLY_IRQ = 0, /* proc/irq/N/smp_affinity_list */
	IP_APPLY_THREAD_AFFINITY,
	IP_APPLY_THREAD_SCHED,
	IP_APPLY_RQ, /* sys/block/X/queue/rq_affinity */
	IP_APPLY_CQ, /* irqpilot_cq attach or detach */
};

enum ip_apply_outcome {
	IP_APPLY_OK = 0,
	IP_APPLY_DRY_RUN,  /* would have been written */
	IP_APPLY_MANAGED,  /* EIO, EPERM or mode 0444: recorded, never written again */
	IP_APPLY_VANISHED, /* ENOENT (IRQ, device) or ESRCH (thread): dropped */
	IP_APPLY_RETRY,	   /* EINVAL, ERANGE: bad or offline CPU, planned again next cycle */
	IP_APPLY_NO_SPACE, /* ENOSPC: no vector space on the CPU; the next one is tried */
	IP_APPLY_FAILED,   /* anything else: planned again; the daemon says it once per object */
	IP_APPLY_SKIPPED,  /* known managed: not written */
};
const char *ip_apply_outcome_name(enum ip_apply_outcome o);

/* What an errno from writing @what means. The one place that decides. */
enum ip_apply_outcome ip_apply_classify(enum ip_apply_what what, int err);

/* Why a result is what it is, where its outcome and errno do not say. */
enum ip_apply_detail {
	IP_APPLY_D_NONE = 0,
	IP_APPLY_D_UNRECORDED,	   /* FAILED: the original could not be made durable first */
	IP_APPLY_D_KNOWN_MANAGED,  /* SKIPPED: a refusal or the mode said so earlier */
	IP_APPLY_D_MODE_0444,	   /* MANAGED: smp_affinity's mode, before any write */
	IP_APPLY_D_ELSEWHERE,	   /* OK, but the read-back shows other CPUs (see pending) */
	IP_APPLY_D_THREAD_GONE,	   /* restore: the thread's pid is gone */
	IP_APPLY_D_IDENTITY,	   /* restore: who the pid is could not be read */
	IP_APPLY_D_PID_REUSED,	   /* restore: the pid names another process now */
	IP_APPLY_D_FREED,	   /* VANISHED: the vector was freed, its original dropped
				      (reused: its number names another vector now) */
	IP_APPLY_D_OFFLINE,	   /* restore, RETRY: none of the original's CPUs is online */
};
const char *ip_apply_detail_name(enum ip_apply_detail d);

struct ip_apply_result {
	enum ip_apply_what what;
	enum ip_apply_outcome outcome;
	enum ip_apply_detail detail;
	bool restore;	 /* ip_apply_restore*(): putting an original back */
	unsigned irq;	 /* IRQ, and the IRQ of a thread */
	pid_t pid;	 /* threads */
	char comm[64];	 /* threads: as planned, or as recorded */
	uint64_t start;	 /* PID_REUSED: the recorded thread's start time */
	char now_comm[64]; /* PID_REUSED: who the pid is now, and since when */
	uint64_t now_start;
	char device[32]; /* rq_affinity, irqpilot_cq */
	unsigned major, minor; /* irqpilot_cq */
	int err;	 /* the negative errno, 0 on success */
	ip_cpuset planned; /* IRQ: the plan's target (ENOSPC falls back from it) */
	ip_cpuset written; /* IRQ and thread affinity: what was (last) written */
	int value; /* rq_affinity value, thread priority, or 1 for an attach */
	int policy; /* thread scheduling policy */
	bool have_effective;
	ip_cpuset effective; /* read back from effective_affinity_list */
	/* x86 IO-APIC lines take a new affinity at their next interrupt, so a
	 * read-back still showing the old CPU is not a refusal. */
	bool pending;
	/* FREED with the line still there: its number was given to another
	 * vector, @now, not the one the original was taken of, @was. */
	bool reused;
	struct ip_irq_ident was, now;
};

struct ip_apply_results {
	int n;
	struct ip_apply_result *r;
};

void ip_apply_results_free(struct ip_apply_results *res);
/* Appends @from's results to @to's and empties @from. 0, or -ENOMEM
 * (then both are as they were). */
int ip_apply_results_move(struct ip_apply_results *to, struct ip_apply_results *from);

/*
 * Carries out @p under @r. Moves and thread actions that did not happen
 * are marked failed in @p (so ip_history_commit() does not record them);
 * a move that fell back to another CPU after ENOSPC gets its new target.
 * What it learns of a vector (managed, where the kernel put it, gone) goes
 * into the policy's @h; the original settings into @o. With @dry_run
 * nothing is written and neither is changed. Returns 0, or -ENOMEM;
 * failures of single actions are results, not errors.
 */
int ip_apply(struct ip_plan *p, struct ip_root *r, struct ip_history *h, struct ip_originals *o,
	     const struct ip_apply_ops *ops, bool dry_run, struct ip_apply_results *out);

/*
 * Writes back every original setting recorded in @o. A record is dropped
 * only once its object was restored, or is gone: an IRQ or device that
 * vanished, an IRQ whose number names another vector now (its line in
 * proc/interrupts, read afresh, is not the recorded one: a FREED result),
 * a thread that exited or whose pid now names another process (pid, comm
 * and start time are compared). A failed restore keeps its record, for a
 * later --restore.
 */
int ip_apply_restore(struct ip_root *r, struct ip_originals *o, const struct ip_apply_ops *ops,
		     struct ip_apply_results *out);
/* Drops the original of each IRQ that is freed: not a line of @s and no
 * proc/irq/N either, or a line of @s that is another vector than the one
 * recorded (ip_irq_ident_reused()). A VANISHED result each, detail FREED,
 * appended to @out, and the policy's history of that vector forgotten.
 * Returns 0, or -ENOMEM. */
int ip_apply_drop_freed(struct ip_root *r, const struct ip_snapshot *s, struct ip_history *h,
			struct ip_originals *o, struct ip_apply_results *out);
/* The same for IRQ @irq alone (irqctl unpin of a non-storage IRQ); no
 * result when nothing was recorded for it. */
int ip_apply_restore_irq(struct ip_root *r, struct ip_originals *o, const struct ip_apply_ops *ops,
			 unsigned irq, struct ip_apply_results *out);

#endif
