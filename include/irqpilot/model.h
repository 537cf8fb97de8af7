/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_MODEL_H
#define IRQPILOT_MODEL_H

/*
 * The system model: a snapshot is what one sample read (sample); a model
 * is two snapshots and the rates between them (derive). The policy only
 * ever sees a model.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/diag.h"
#include "irqpilot/root.h"
#include "irqpilot/storage.h"
#include "irqpilot/topology.h"

/* Why a vector is considered managed by the kernel. */
enum ip_managed_why {
	IP_MANAGED_NO = 0,
	IP_MANAGED_MODE,     /* smp_affinity is mode 0444 (6.18+) */
	IP_MANAGED_EIO,      /* a write failed with EIO (6.1) */
	IP_MANAGED_EPERM,    /* a write failed with EPERM */
	IP_MANAGED_SPREAD,   /* inferred: one vector per hw queue, each pinned to its queue's CPUs */
};
/* In words (report.c, the only wording of it). */
const char *ip_managed_why_str(enum ip_managed_why w);

/*
 * What only a tracked vector carries: its /proc/irq/N/ files, whether the
 * kernel manages it and the storage devices on its line. A big machine
 * lists thousands of IRQs and tracks a few dozen; kept in every line, the
 * two CPU sets alone were 2 MB a snapshot at 1,024 CPUs and 8,000 lines.
 */
struct ip_irq_info {
	char *chip, *hwirq, *trigger; /* in the same allocation as the struct */
	bool have_proc;      /* /proc/irq/N/ was read */
	ip_cpuset affinity;  /* smp_affinity_list */
	bool have_effective;
	ip_cpuset effective; /* effective_affinity_list */
	int node;
	mode_t mode;         /* permission bits of smp_affinity */
	enum ip_managed_why managed;
	int nr_devs;         /* storage devices with a vector on this line */
	int devs[4];         /* indexes into storage.devs (a shared INTx line has several) */
	int vecs[4];         /* the line's vector in each of those devices (index into its
				vectors; the later of two that name the same IRQ) */
};

/*
 * Who a vector is, as show_interrupts() (kernel/irq/proc.c) prints its
 * line: the chip's name (or what irq_print_chip() prints), the hwirq in
 * its domain (on x86 followed by "-" and the flow handler's name) and the
 * names its actions were requested with (request_irq()'s devname). A freed
 * vector's number goes to the next vector allocated, so the number alone
 * does not say which vector an original setting belongs to.
 *
 * Each string is cut to its array, by ip_irq_ident_set() alone, so that a
 * recorded identity and a line's are cut alike. A field not known says
 * nothing: a record from before identities were kept has neither; a line
 * sampled untracked has no chip or hwirq (only tracked lines keep them).
 */
#define IP_IDENT_CHIP_MAX 48
#define IP_IDENT_HWIRQ_MAX 32
#define IP_IDENT_ACTIONS_MAX 128

struct ip_irq_ident {
	bool have_hw;	   /* chip and hwirq */
	bool have_actions; /* actions ("" when the line has none) */
	char chip[IP_IDENT_CHIP_MAX];
	char hwirq[IP_IDENT_HWIRQ_MAX];
	char actions[IP_IDENT_ACTIONS_MAX];
};

/* @chip and @hwirq NULL: not known. @actions NULL: not known. */
void ip_irq_ident_set(struct ip_irq_ident *id, const char *chip, const char *hwirq,
		      const char *actions);
struct ip_irq;
/* What a snapshot's line says of its vector. */
void ip_irq_ident_of(const struct ip_irq *q, struct ip_irq_ident *id);
/* Whether @now, the line that has @was's number now, is another vector
 * than the one @was was recorded of (derive.c says how it is told). */
bool ip_irq_ident_reused(const struct ip_irq_ident *was, const struct ip_irq_ident *now);
/* "GICv3 297 ufshcd", for messages. */
const char *ip_irq_ident_str(const struct ip_irq_ident *id, char *buf, size_t size);

/* A tracked line's interrupts on one CPU. The kernel counts them in 32
 * bits (derive knows the wrap). */
struct ip_cpu_count {
	uint32_t cpu;
	uint32_t count;
};

struct ip_irq {
	unsigned irq;
	bool tracked;        /* storage vector, or named by the policy */
	bool unnamed_action; /* actions "" and yet an action, named "" (struct ip_irq_line) */
	/* entries of percpu; at most IP_CPU_MAX. 16 bits keep the struct at
	 * 40 bytes: a snapshot holds one for every line of /proc/interrupts. */
	uint16_t nr_percpu;
	char *actions;       /* "" when the line has none; in snapshot.irq_names */
	uint64_t total;      /* sum over the online columns */
	/* Tracked lines only: the CPUs with a non-zero count, ascending;
	 * NULL for the rest and for a tracked line that has none. A vector
	 * fires on the few CPUs of its affinity: at 1,024 CPUs an array by
	 * CPU held 4 KB of zeros a vector, in both snapshots of a cycle. */
	struct ip_cpu_count *percpu;
	struct ip_irq_info *info; /* tracked lines only, else NULL: read it with ip_irq_info() */
};

_Static_assert(IP_CPU_MAX <= UINT16_MAX, "struct ip_irq counts CPUs in 16 bits");

/* @q's count on @cpu, 0 where it has none. */
uint32_t ip_irq_count_on(const struct ip_irq *q, int cpu);

/* How a line without /proc/irq data reads: nothing known, node -1, not
 * managed, on no storage device. */
extern const struct ip_irq_info ip_irq_info_none;

static inline const struct ip_irq_info *ip_irq_info(const struct ip_irq *q)
{
	return q->info ? q->info : &ip_irq_info_none;
}

struct ip_irq_thread {
	pid_t pid;
	unsigned irq;
	bool secondary;      /* irq/N-s-name */
	char comm[64];
	ip_cpuset allowed;   /* Cpus_allowed_list */
	unsigned policy;     /* SCHED_* */
	unsigned rt_priority;
	uint64_t utime, stime; /* clock ticks */
	uint64_t vcsw, nvcsw;  /* context switches: each voluntary one is a wakeup */
	int last_cpu;
};

/* Where a per-CPU I/O count came from. Every rate records its source. */
enum ip_count_source {
	IP_SRC_NONE = 0,
	IP_SRC_REPLAY,       /* irqpilot/submit and irqpilot/complete of a capture */
	IP_SRC_MODULE,       /* irqpilot_cq per-CPU counts */
	IP_SRC_PERF,         /* perf tracepoint counters */
	IP_SRC_TASKS,        /* /proc task sampling, apportioned from diskstats */
	IP_SRC_INTERRUPTS,   /* completions: the device's vectors' interrupts per CPU */
};
const char *ip_count_source_name(enum ip_count_source s);

struct ip_devcount {
	enum ip_count_source submit_src, complete_src;
	uint64_t *submit;    /* nr_cpus cumulative, NULL if no source */
	uint64_t *complete;
	uint64_t ios;        /* diskstats reads+writes completed, cumulative */
};

/*
 * A completion thread of irqpilot_cq.ko: one per hw queue of an attached
 * disk (IPCQ_CMD_LIST, or a replay step's irqpilot/cq file).
 */
struct ip_cq_thread {
	char disk[32];
	unsigned major, minor;
	int dev;	     /* index into storage.devs, -1 when not a known device */
	unsigned hwq, nr_hwq;
	pid_t pid;
	uint64_t completions, wakeups, max_wait_ns, stalls, fallbacks;
	uint64_t *cpu_completions; /* topo.nr_cpus, cumulative, by submitting CPU */
	bool have_sched;     /* /proc/PID/status and stat were read */
	ip_cpuset allowed;   /* Cpus_allowed_list */
	unsigned policy, rt_priority;
	int last_cpu;	     /* where it last ran, -1 */
	/* irqpilot_cq reported a stall of this queue since the last cycle: a
	 * request waited stall_wait_ns for the thread (0: none). An input of
	 * the policy like any count; the engine fills it from the events. */
	uint64_t stalled_ns, stall_wait_ns;
};

struct ip_snapshot {
	uint64_t time_ns;    /* CLOCK_MONOTONIC */
	struct ip_topology topo;
	struct ip_storage storage;
	int nr_irqs;
	struct ip_irq *irqs; /* sorted by number */
	char *irq_names;     /* the irqs' actions, one allocation for all lines */
	/* A sample between full scans: the tracked lines' infos and percpu
	 * arrays are in this one allocation, not each its own (sample.c). */
	void *fast_block;
	uint64_t *irq_load;  /* nr_cpus: all numbered interrupts handled per CPU */
	/* The CPUs whose counts the lines' totals hold: /proc/interrupts'
	 * columns, one per online CPU (kernel/irq/proc.c show_interrupts()).
	 * Totals of two snapshots that count different CPUs do not subtract:
	 * a CPU gone takes its count with it, and one back brings it. */
	ip_cpuset counted;
	uint64_t *block_softirq; /* nr_cpus */
	int nr_threads;
	struct ip_irq_thread *threads;
	struct ip_devcount *dc;  /* storage.nr_devs entries */
	/* Every disk's completed I/Os in /proc/diskstats, what the idle probe
	 * sums (ip_sampler_probe()): its baseline after a full cycle.
	 * have_all_ios when a line was read. */
	uint64_t all_ios;
	bool have_all_ios;
	/* Which disks and partitions /proc/diskstats listed, in its order: a
	 * hash of their numbers and names, so that one come or gone shows
	 * without a uevent (the sampler's disks_changed()). */
	uint64_t disks_sig;
	/* irqpilot_cq: have_cq when the module answered (or a replay step
	 * recorded it); nr_cq may be 0 then: nothing attached. */
	bool have_cq;
	int nr_cq;
	struct ip_cq_thread *cq;
};

void ip_snapshot_free(struct ip_snapshot *s);
/* Frees the completion threads only (ip_snapshot_free does it too);
 * safe to call twice. */
void ip_snapshot_free_cq(struct ip_snapshot *s);
/* The completion threads of device @dev (an index into storage.devs). */
int ip_snapshot_cq_count(const struct ip_snapshot *s, int dev);
struct ip_irq *ip_snapshot_irq(const struct ip_snapshot *s, unsigned irq);
/* ip_snapshot_irq() for IRQs asked in ascending order, as a device's
 * vectors mostly are: *@cursor, 0 before the first, is where the last one
 * was (ip_sorted_next()). Any order gives the same answers. */
struct ip_irq *ip_snapshot_irq_next(const struct ip_snapshot *s, unsigned irq, size_t *cursor);

/* ---- derive ------------------------------------------------------ */

struct ip_irq_rate {
	double total;        /* interrupts/s */
	/* Tracked IRQs only: interrupts/s of CPUs first .. first + nr - 1,
	 * the span it fired on in the interval; 0 elsewhere (and nr 0,
	 * percpu NULL, when it did not fire). A vector fires on the few CPUs
	 * of its affinity: by all CPUs these were 4 KB a vector at 1,024
	 * CPUs, the largest block of a cycle. float: a rate needs no more
	 * than its 7 digits (reports print 6). ip_irq_rate_on() reads one. */
	int first, nr;
	float *percpu;
};

static inline double ip_irq_rate_on(const struct ip_irq_rate *r, int cpu)
{
	return cpu >= r->first && cpu < r->first + r->nr ? r->percpu[cpu - r->first] : 0;
}

struct ip_dev_rate {
	enum ip_count_source submit_src, complete_src;
	double *submit;      /* nr_cpus, per second */
	double *complete;
	double submit_total, complete_total;
	double ios;          /* diskstats I/Os per second */
};

struct ip_thread_rate {
	double cpu_pct;      /* of one CPU */
	double wakeups;      /* per second */
	double wakeups_per_irq; /* -1 when its IRQ did not fire */
};

struct ip_model {
	const struct ip_snapshot *cur;
	const struct ip_snapshot *prev; /* NULL on the first sample: no rates */
	double interval_s;
	double *cpu_irq;     /* nr_cpus: interrupts/s handled per CPU */
	double *cpu_softirq; /* nr_cpus: BLOCK softirqs/s per CPU */
	struct ip_irq_rate *irq;       /* cur->nr_irqs */
	struct ip_dev_rate *dev;       /* cur->storage.nr_devs */
	struct ip_thread_rate *thread; /* cur->nr_threads */
};

/* Rates between @prev (may be NULL) and @cur. Counters that went down
 * (a 32-bit wrap or a reused IRQ number) count as a restart from zero. */
int ip_model_derive(const struct ip_snapshot *prev, const struct ip_snapshot *cur, struct ip_model *m,
		    struct ip_diag *d);
void ip_model_free(struct ip_model *m);

/* Rates of completion thread @i of m->cur, matched in m->prev by device,
 * queue and pid (a new thread has none yet). */
struct ip_cq_rate {
	bool have;		 /* false on the first sample or for a new thread */
	double completions;	 /* per second */
	double wakeups_per_completion; /* -1 when it completed nothing */
	double submit_total;	 /* per second, = sum of submit[] */
};
/* @by_cpu (nr_cpus, may be NULL): completions per second by submitting CPU. */
void ip_model_cq_rate(const struct ip_model *m, int i, struct ip_cq_rate *out, double *by_cpu);

/* Submissions per second on the CPUs of hw queue @q of device @dev (all
 * queues if q < 0). */
double ip_model_queue_submit(const struct ip_model *m, int dev, int q, double *by_cpu_out);

/* The CPUs that submitted to any tracked device in this sample. */
void ip_model_submit_cpus(const struct ip_model *m, ip_cpuset *out);

#endif
