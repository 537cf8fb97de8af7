/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_POLICY_H
#define IRQPILOT_POLICY_H

/*
 * decide: from a model, the configuration and what earlier cycles did,
 * a plan of IRQ moves, IRQ thread changes and rq_affinity settings, each
 * with a one-line reason. Pure: no I/O, no clock (time comes in as now_ns).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/model.h"

/* ---- configuration -------------------------------------------------- */

enum ip_granularity {
	IP_GRAN_CPU = 0, /* one CPU of the submitter domain */
	IP_GRAN_DOMAIN,	 /* the whole domain (minus isolated/banned CPUs) */
};

enum ip_idle_domain {
	IP_IDLE_EFFICIENCY = 0, /* idle vectors go back to the lowest-capacity domain */
	IP_IDLE_STAY,
};

/*
 * One [device "GLOB"] or [irq "GLOB"] section. A device rule's glob is
 * matched against block device names (sda, nvme0n1); an IRQ rule's
 * against each action name of the line ("nvme0q1", "mmc0") and against
 * the IRQ number as a string ("45").
 */
struct ip_rule {
	char *match; /* fnmatch(3) glob, owned */
	bool have_pin;
	ip_cpuset pin;
	bool ban;	 /* never touch the vector(s) or their threads */
	int rt_priority; /* SCHED_FIFO priority of the IRQ threads, -1 = policy default */
	int rq_affinity; /* device rules only: 0, 1 or 2; -1 = leave as is */
	/* device rules only: enum ip_cq_mode, -1 = the policy's */
	int completion_threads;
};

/*
 * Whether a device's block completions go to irqpilot_cq's per-queue
 * threads. Same values as config.h's enum ip_completion_threads, which the
 * caller copies into struct ip_policy_config and its device rules (see
 * ip_engine_config_from()).
 */
enum ip_cq_mode {
	IP_CQ_MODE_AUTO = 0,
	IP_CQ_MODE_YES,
	IP_CQ_MODE_NO,
};

struct ip_policy_config {
	enum ip_granularity granularity;
	double move_threshold; /* fraction, 0.20 = 20 percentage points of locality */
	double dwell_s;	       /* no second move of a vector within this */
	int max_moves;	       /* per cycle */
	double min_rate;       /* interrupts/s below which no move to higher capacity */
	enum ip_idle_domain idle_domain;
	double idle_grace_s;
	double return_window_s; /* moving back within this needs 2x the threshold */
	int rt_priority;	/* SCHED_FIFO priority of IRQ threads; 0 = leave */
	ip_cpuset banned;	/* never placed on */
	enum ip_cq_mode completion_threads;
	int nr_dev_rules;
	struct ip_rule *dev_rules;
	int nr_irq_rules;
	struct ip_rule *irq_rules;
};

void ip_policy_config_init(struct ip_policy_config *c);
void ip_policy_config_free(struct ip_policy_config *c);
/* Appends a rule with no action (rt_priority = rq_affinity = -1) and
 * returns it, or NULL on ENOMEM. @match is copied. */
struct ip_rule *ip_policy_add_dev_rule(struct ip_policy_config *c, const char *match);
struct ip_rule *ip_policy_add_irq_rule(struct ip_policy_config *c, const char *match);

/* ---- history: what earlier cycles did ------------------------------- */

struct ip_irq_hist {
	unsigned irq;
	bool placed;		     /* we set its affinity at least once */
	ip_cpuset placement;	     /* as we last set it */
	uint64_t last_move_ns;	     /* 0 = never moved */
	ip_cpuset from;		     /* where it was handled before the last move */
	uint64_t idle_since_ns;	     /* submitters idle since then, 0 = active */
	enum ip_managed_why managed; /* found managed when writing (apply) */
	bool managed_explained;	     /* the long "managed" reason was given once */
	bool have_pin;		     /* runtime pin from irqctl pin */
	ip_cpuset pin;
	bool have_effective; /* read back after the last write */
	ip_cpuset effective;
	char *orig; /* its smp_affinity_list before our first write, owned */
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

/* A completion thread we placed (irqpilot_cq). */
struct ip_cq_hist {
	pid_t pid;
	uint64_t last_move_ns;
	ip_cpuset placement;
};

/* A device and irqpilot_cq. */
struct ip_cqdev_hist {
	char device[32];
	unsigned major, minor;
	bool attached_by_us;	/* detached again on restore */
	uint64_t attached_ns;	/* when we last attached it, 0 = never */
	uint64_t last_stall_ns; /* the last stall event, 0 = none */
	uint64_t hold_until_ns; /* auto attaches it again only after this */
	char hold_why[128];
	/* An automatic attach is a trial: kept only if the device's I/O rate
	 * attached is not below its rate before (EWMA of the cycles before),
	 * and starts only once before_n cycles of that rate were seen. */
	double ios_before;
	int before_n;
	bool trial;
	double trial_sum;
	int trial_n;
};

struct ip_history {
	size_t nr, alloc;
	struct ip_irq_hist *irqs; /* sorted by irq */
	size_t nr_threads;
	struct ip_thread_orig *threads;
	size_t nr_rq;
	struct ip_rq_orig *rq;
	size_t nr_logged;
	char **logged; /* objects whose unexpected error was already logged */
	size_t nr_cq;
	struct ip_cq_hist *cq;
	size_t nr_cqdev;
	struct ip_cqdev_hist *cqdev;
};

void ip_history_init(struct ip_history *h);
void ip_history_free(struct ip_history *h);
const struct ip_irq_hist *ip_history_find(const struct ip_history *h, unsigned irq);
/* Finds or creates; NULL on ENOMEM. */
struct ip_irq_hist *ip_history_get(struct ip_history *h, unsigned irq);
void ip_history_drop(struct ip_history *h, unsigned irq);
/* irqctl pin / unpin: a runtime pin wins over every rule. */
int ip_history_pin(struct ip_history *h, unsigned irq, const ip_cpuset *cpus);
void ip_history_unpin(struct ip_history *h, unsigned irq);
/* Find, or find-or-create (NULL on ENOMEM). */
const struct ip_cq_hist *ip_history_cq_find(const struct ip_history *h, pid_t pid);
struct ip_cq_hist *ip_history_cq_get(struct ip_history *h, pid_t pid);
const struct ip_cqdev_hist *ip_history_cqdev_find(const struct ip_history *h, const char *device);
struct ip_cqdev_hist *ip_history_cqdev_get(struct ip_history *h, const char *device);
/* True the first time @key ("irq 45", "pid 812") is passed; records it. */
bool ip_history_log_once(struct ip_history *h, const char *key);

struct ip_plan;
/* Records what the plan did (moves not marked failed by apply, the
 * managed explanations given, idle submitters) at @now_ns. */
int ip_history_commit(struct ip_history *h, const struct ip_plan *p, uint64_t now_ns);

/* ---- the plan ------------------------------------------------------- */

#define IP_REASON_MAX 256

struct ip_move {
	unsigned irq;
	char name[64];		 /* action names of the line */
	char device[64];	 /* "sda", "mmcblk0+sda" for a shared line */
	ip_cpuset from;		 /* where its interrupts were handled */
	ip_cpuset from_affinity; /* smp_affinity_list as sampled */
	ip_cpuset to;
	ip_cpuset fallback; /* other CPUs of the target domain, for ENOSPC */
	bool ioapic;	    /* INTx line: new affinity applies at the next interrupt */
	bool failed;	    /* set by apply: not done, do not record it */
	char reason[IP_REASON_MAX];
};

struct ip_thread_action {
	pid_t pid;
	char comm[64];
	unsigned irq;	 /* 0 for a completion thread */
	bool completion; /* an irqpilot_cq thread of device[], queue hwq */
	char device[32];
	unsigned hwq;
	bool set_affinity;
	ip_cpuset from, to;
	bool set_sched;
	int from_policy, from_priority;
	int policy, priority; /* SCHED_FIFO, 1..99 */
	bool failed;
	char reason[IP_REASON_MAX];
};

struct ip_kept {
	unsigned irq;
	char name[64];
	/* For managed vectors: true the one cycle the long explanation is
	 * given, so the logger can log it once. Always true otherwise. */
	bool explained;
	bool managed;
	char reason[IP_REASON_MAX];
};

struct ip_rq_action {
	char device[32];
	int from, value; /* from = -1 when unreadable */
	bool failed;
	char reason[IP_REASON_MAX];
};

/* Attach a device to irqpilot_cq, or detach it. */
struct ip_cq_action {
	char device[32];
	unsigned major, minor;
	bool attach;
	bool trial; /* an automatic attach, judged by its I/O rate */
	bool failed; /* set by apply */
	char reason[IP_REASON_MAX];
};

/* Per device with irqpilot_cq present, each cycle: the trial's input. */
struct ip_cq_obs {
	char device[32];
	double ios;    /* I/Os per second this cycle */
	bool attached;
	int verdict;   /* trial over: 1 kept, -1 the original path was faster */
};

/* Per considered vector, for the history. */
struct ip_vec_state {
	unsigned irq;
	bool idle; /* its submitters submitted nothing */
};

struct ip_plan {
	int nr_moves, nr_threads, nr_kept, nr_rq, nr_notes, nr_states, nr_cq, nr_cq_obs;
	struct ip_move *moves;
	struct ip_thread_action *threads;
	struct ip_kept *kept;
	struct ip_rq_action *rq;
	char (*notes)[IP_REASON_MAX];
	struct ip_vec_state *states;
	struct ip_cq_action *cq;
	struct ip_cq_obs *cq_obs;
};

int ip_policy_decide(const struct ip_model *m, const struct ip_policy_config *cfg,
		     const struct ip_history *h, uint64_t now_ns, struct ip_plan *out);
void ip_plan_free(struct ip_plan *p);

#endif
