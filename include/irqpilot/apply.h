/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_APPLY_H
#define IRQPILOT_APPLY_H

/*
 * act: the only code that changes the system. It writes a plan's IRQ
 * affinities, IRQ thread affinities and priorities and rq_affinity, reads
 * back where the kernel really put each vector, sorts every failure into
 * what it means for the next cycle, and remembers the original settings
 * so that they can be restored. It never prints: each action gives a
 * result record with a one-line message.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/policy.h"
#include "irqpilot/root.h"

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
	/* Write-ahead: makes the originals in @h durable (the state file,
	 * fsync'd). Called when an original was added, before the write it
	 * guards; when it fails, that write is not made. NULL: nothing to
	 * persist (tests, --oneshot). */
	int (*record)(void *record_ctx, const struct ip_history *h);
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
	IP_APPLY_FAILED,   /* anything else: logged once per object */
	IP_APPLY_SKIPPED,  /* known managed: not written */
};
const char *ip_apply_outcome_name(enum ip_apply_outcome o);

/* What an errno from writing @what means. The one place that decides. */
enum ip_apply_outcome ip_apply_classify(enum ip_apply_what what, int err);

struct ip_apply_result {
	enum ip_apply_what what;
	enum ip_apply_outcome outcome;
	unsigned irq;	 /* IRQ, and the IRQ of a thread */
	pid_t pid;	 /* threads */
	char device[32]; /* rq_affinity */
	int err;	 /* the negative errno, 0 on success */
	bool log;	 /* false when this object's failure was already logged */
	ip_cpuset written;
	int value; /* rq_affinity value, or thread priority */
	bool have_effective;
	ip_cpuset effective; /* read back from effective_affinity_list */
	/* x86 IO-APIC lines take a new affinity at their next interrupt, so a
	 * read-back still showing the old CPU is not a refusal. */
	bool pending;
	char msg[IP_REASON_MAX];
};

struct ip_apply_results {
	int n;
	struct ip_apply_result *r;
};

void ip_apply_results_free(struct ip_apply_results *res);

/*
 * Carries out @p under @r. Moves and thread actions that did not happen
 * are marked failed in @p (so ip_history_commit() does not record them);
 * a move that fell back to another CPU after ENOSPC gets its new target.
 * Managed vectors, read-backs and original settings go into @h. With
 * @dry_run nothing is written and @h is left alone. Returns 0, or -ENOMEM;
 * failures of single actions are results, not errors.
 */
int ip_apply(struct ip_plan *p, struct ip_root *r, struct ip_history *h,
	     const struct ip_apply_ops *ops, bool dry_run, struct ip_apply_results *out);

/*
 * Writes back every original setting recorded in @h. A record is dropped
 * only once its object was restored, or is gone: an IRQ or device that
 * vanished, a thread that exited or whose pid now names another process
 * (pid, comm and start time are compared). A failed restore keeps its
 * record, for a later --restore.
 */
int ip_apply_restore(struct ip_root *r, struct ip_history *h, const struct ip_apply_ops *ops,
		     struct ip_apply_results *out);
/* The same for IRQ @irq alone (irqctl unpin of a non-storage IRQ); no
 * result when nothing was recorded for it. */
int ip_apply_restore_irq(struct ip_root *r, struct ip_history *h, const struct ip_apply_ops *ops,
			 unsigned irq, struct ip_apply_results *out);

#endif
