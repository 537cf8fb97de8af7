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
 * Whether a device's block completions go to irqpilot_cq's per-queue
 * threads: the completion_threads key of [policy] and of [device]
 * sections (irqpilot.conf(5)), which config.c stores here directly.
 */
enum ip_completion_threads {
	IP_COMPLETION_INHERIT = -1, /* device rules only: the policy's */
	IP_COMPLETION_AUTO = 0,
	IP_COMPLETION_YES,
	IP_COMPLETION_NO,
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
	/* device rules only; IP_COMPLETION_INHERIT = the policy's */
	enum ip_completion_threads completion_threads;
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
	/* Cycles the submission and handled shares are averaged over (EWMA,
	 * alpha = 2 / (window + 1) for a sample one interval_s long); 1 decides
	 * on each sample alone. */
	int window;
	/* The nominal cycle, in seconds, that the window is counted in: a
	 * sample of another length weighs by its length. 0: every sample
	 * counts as one cycle. */
	double interval_s;
	int rt_priority;	/* SCHED_FIFO priority of IRQ threads; 0 = leave */
	ip_cpuset banned;	/* never placed on */
	enum ip_completion_threads completion_threads; /* never INHERIT */
	int nr_dev_rules;
	struct ip_rule *dev_rules;
	int nr_irq_rules;
	struct ip_rule *irq_rules;
};

void ip_policy_config_init(struct ip_policy_config *c);
void ip_policy_config_free(struct ip_policy_config *c);
/* Appends a rule with no action (rt_priority = rq_affinity = -1,
 * completion_threads INHERIT) and returns it, or NULL on ENOMEM. @match is
 * copied. */
struct ip_rule *ip_policy_add_dev_rule(struct ip_policy_config *c, const char *match);
struct ip_rule *ip_policy_add_irq_rule(struct ip_policy_config *c, const char *match);
/* The completion_threads in force for block device @device: the last
 * [device] rule that matches it and sets it (*@src, if @src is not NULL),
 * else the policy's own (*@src = NULL). Never INHERIT. */
enum ip_completion_threads ip_policy_completion_threads(const struct ip_policy_config *c,
							 const char *device,
							 const struct ip_rule **src);
/* Whether an [irq NAME] rule names the line (its number or one of its
 * comma-separated action names), as the policy matches them. */
bool ip_policy_irq_named(const struct ip_policy_config *cfg, unsigned irq, const char *actions);

/*
 * A submitter dominates its domain when its share of the domain's
 * submissions, averaged over the window, is at least this: the vector and
 * its IRQ thread then go to its own CPU (under threadirqs the BLOCK softirq
 * runs where the IRQ thread runs, so its completions stay on the CPU that
 * waits for them). Above one half, so that two CPUs never both dominate;
 * above the 0.73 that a load alternating between two CPUs every 4 cycles
 * or faster reaches in the default window (1 / (1 + b^4), b = 7/9), so
 * that such a load moves nothing within the domain. See policy.c.
 */
#define IP_DOMINANT_SHARE 0.75

/* A second stall of a completion thread within this detaches its device ... */
#define IP_CQ_STALL_WINDOW_S 60
/* ... which is then not attached again automatically for this long. */
#define IP_CQ_STALL_HOLD_S 600

/* ---- reasons ---------------------------------------------------------- */

/*
 * Why the policy decided what it did: one code per distinct decision and
 * the numbers behind it. The policy writes no text; report.c turns a
 * reason into words (ip_report_why()), JSON ("code" is ip_reason_code())
 * and journal fields. Values are never renumbered (only appended), but
 * scripts should match the code string, which is stable.
 */
enum ip_reason {
	IP_R_NONE = 0,
	/* a vector kept where it is */
	IP_R_BANNED,		   /* rule: a ban rule matched */
	/* managed by the kernel, by managed_why; has_thread, explained */
	IP_R_MANAGED_READONLY,	   /* smp_affinity is mode 0444 */
	IP_R_MANAGED_EIO,	   /* a write failed with EIO */
	IP_R_MANAGED_EPERM,	   /* a write failed with EPERM */
	IP_R_MANAGED_SPREAD,	   /* one vector per hw queue, on its queue's CPUs */
	IP_R_PIN_UNUSABLE,	   /* set (the pin), src */
	IP_R_PINNED,		   /* set (the pin, trimmed), src: already there */
	IP_R_NO_RATES,		   /* first sample */
	IP_R_ADMIN_VECTOR,	   /* not on the I/O path */
	IP_R_NO_COUNTS,		   /* devices: no submission counts */
	IP_R_NO_SUBMITTERS,	   /* no submissions on online CPUs */
	IP_R_NO_HOUSEKEEPING,	   /* devices, set: submitter CPUs, set2: those offline; none usable */
	IP_R_NO_USABLE_CPU,	   /* none in the submitter domain */
	IP_R_ALREADY_PLACED,	   /* cls, domain, share, devices */
	IP_R_BELOW_THRESHOLD,	   /* gain, threshold; returning: set (target), window_s */
	IP_R_TRICKLE,		   /* rate, min_rate: not up to a higher-capacity domain */
	IP_R_IDLE_STAY,		   /* devices; idle_domain = stay */
	IP_R_IDLE_EFFICIENT,	   /* devices: idle, already on an efficiency domain */
	IP_R_IDLE_GRACE,	   /* devices, since_s, limit_s (idle_grace) */
	IP_R_DWELL,		   /* since_s, limit_s (dwell) */
	IP_R_BUDGET,		   /* count (max_moves) */
	IP_R_ALTERNATING,	   /* since_s (wanted), limit_s (return_window), domain */
	IP_R_REFUSED,		   /* set (the affinity we wrote), set2 (effective) */
	/* a vector moved */
	IP_R_PIN,		   /* src; trimmed: set (the pin), set2 (what is left) */
	IP_R_SUBMITTERS_ELSEWHERE, /* share, devices, cls, domain, handled, for_thread */
	IP_R_HOUSEKEEPING,	   /* share, devices, cls, domain (isolated), cpu, tier, handled */
	IP_R_IDLE_RETURN,	   /* devices, since_s, limit_s, domain */
	/* IRQ threads and completion threads */
	IP_R_FOLLOWS_MOVE,	   /* irq, set: follows its vector's move */
	IP_R_FOLLOWS,		   /* irq, set: follows its vector where it is */
	IP_R_VECTOR_MANAGED,	   /* its vector is managed; the thread is left */
	IP_R_MANAGED_THREAD,	   /* irq; detail: the thread's own placement */
	IP_R_RT_PRIORITY,	   /* prio, src */
	IP_R_QUEUE_SUBMITTERS,	   /* share, hwq, cls, domain */
	IP_R_STALL,		   /* hwq, cpu (stalled on), wait_ms: moved off the busy CPU */
	/* rq_affinity */
	IP_R_RQ_RULE,		   /* src (rule) */
	/* irqpilot_cq attach / detach */
	IP_R_CQ_MODE,		   /* src: completion_threads = yes / no */
	IP_R_CQ_TRIAL_FAILED,	   /* ios, ios_before */
	IP_R_CQ_TRIAL,		   /* detail: why auto wants it (IP_R_CQ_NEEDED) */
	IP_R_CQ_AUTO_DETACH,	   /* detail: why auto no longer wants it */
	IP_R_CQ_STALLED,	   /* hwq, limit_s (window), hold_s: stalled twice, detached */
	/* why completion_threads = auto wants a device (details of the above) */
	IP_R_CQ_NO_SUBMISSIONS,
	IP_R_CQ_NO_VECTOR_AWAY,
	IP_R_CQ_BLKMQ_COMPLETES,   /* irq, stuck, count (rq_affinity) */
	IP_R_CQ_NOT_SLOWER,	   /* irq, stuck, set (handled), domain */
	IP_R_CQ_NEEDED,		   /* irq, stuck, set (handled), share (away), domain, stay */
	/* notes */
	IP_R_NOTE_FIRST_SAMPLE,
	IP_R_NOTE_ALL_ISOLATED,	   /* devices, cpu, tier */
	IP_R_NOTE_DOMAIN_ISOLATED, /* devices, domain, cpu, tier */
	IP_R_NOTE_PIN_UNUSABLE,	   /* irq, set, src */
	IP_R_NOTE_PIN_GONE,	   /* irq, set: an irqctl pin's IRQ is not in /proc/interrupts */
	IP_R_NOTE_CQ_KEPT,	   /* device, ios, ios_before: a trial kept */
	IP_R_NOTE_CQ_HELD,	   /* device; detail, the hold's numbers */
	IP_R_NOTE_STALL_NO_TARGET, /* device, hwq, cpu, wait_ms */
	/* why a device is held back from irqpilot_cq (detail of NOTE_CQ_HELD) */
	IP_R_HOLD_TRIAL,	   /* ios, ios_before, hold_s */
	IP_R_HOLD_STALL,	   /* hwq, limit_s (window), hold_s */
	/* a vector moved off a CPU it may no longer use, whatever dwell,
	 * threshold, window and max_moves say: set (its CPUs that are now
	 * isolated or banned), domain, cls, cpu (-1: the whole domain);
	 * other_domain: none left in its own domain set2, the nearest by
	 * capacity (capacity, from capacity2) */
	IP_R_OFF_ISOLATED,	   /* isolated or nohz_full (also at run time) */
	IP_R_OFF_BANNED,	   /* the banned set ([cpus] banned, irqctl ban) */
	/* a vector already in its submitters' domain, which spans NUMA nodes,
	 * handled only off its device's node: to that node's CPUs of the
	 * domain. share, cls, domain, set (where it was handled), node, nodes */
	IP_R_NUMA_NODE,
	/* a vector already in its submitters' domain, handled off the CPU of the
	 * one submitter that dominates the domain's submissions over the window
	 * (IP_DOMINANT_SHARE): to that CPU. cpu, share (its share of the domain's
	 * submissions), threshold, cls, domain, set (where it was handled) */
	IP_R_DOMINANT_CPU,
	IP_R_COUNT
};

/* Where a setting came from. */
enum ip_reason_src {
	IP_FROM_POLICY = 0, /* the policy's own default */
	IP_FROM_RULE,	   /* rule[] */
	IP_FROM_PIN, /* irqctl pin */
};

/* Why a vector cannot follow its submitters (completion_threads = auto). */
enum ip_stuck {
	IP_STUCK_NONE = 0,
	IP_STUCK_MANAGED,
	IP_STUCK_REFUSED, /* did not move where it was set */
	IP_STUCK_PIN_IRQCTL,
	IP_STUCK_PIN_RULE,
	IP_STUCK_SPREAD, /* serves submitters in several domains */
};

/* Why completions stay on the interrupt's CPU. */
enum ip_stay {
	IP_STAY_NONE = 0,
	IP_STAY_THREADIRQS,
	IP_STAY_RQ_AFFINITY0,
	IP_STAY_SHARED_CACHE,	/* before 6.9: rq_affinity 1 and a cache shared with the submitter */
};

/* How a housekeeping CPU was found for isolated submitters. */
enum ip_hk_tier {
	IP_HK_LLC = 0,	   /* same capacity and LLC */
	IP_HK_PACKAGE,	   /* same capacity and package */
	IP_HK_CLASS,	   /* same class */
};

/* The numbers behind a decision; which fields count depends on code. */
struct ip_why {
	enum ip_reason code;
	enum ip_reason detail; /* a reason within the reason, or IP_R_NONE */
	enum ip_reason_src src;
	char rule[64];	       /* the rule's glob, src == IP_FROM_RULE */
	char devices[64];      /* "sda", "mmcblk0+sda": whose submitters */
	unsigned irq;	       /* a vector other than the record's own, or its thread's */
	double share;	       /* of submissions, 0..1 */
	double handled;	       /* share of interrupts handled in the domain, 0..1 */
	double gain, threshold; /* of locality, 0..1 */
	double rate, min_rate; /* interrupts/s */
	double since_s, limit_s; /* how long, and the setting it is held to */
	double ios, ios_before; /* I/Os per second, with and without irqpilot_cq */
	double wait_ms;	       /* a stall's wait */
	int hold_s;
	int count;	       /* max_moves, rq_affinity, idle_grace doublings */
	int prio;
	int cpu;	       /* housekeeping CPU, stalled CPU */
	unsigned hwq;
	int cls;	       /* enum ip_cap_class of domain */
	ip_cpuset domain;      /* the CPUs of the domain the reason names */
	ip_cpuset set, set2;   /* pin / trimmed pin, handled CPUs, follow target */
	enum ip_managed_why managed_why;
	enum ip_stuck stuck;
	enum ip_stay stay;
	enum ip_hk_tier tier;
	bool has_thread;       /* IP_R_MANAGED_*: its IRQ thread is moved instead */
	bool explained;	       /* IP_R_MANAGED_*: the long form, given once */
	bool for_thread;       /* the placement of a thread, not of a vector */
	bool returning;	       /* IP_R_BELOW_THRESHOLD: moving back, twice the threshold */
	bool trimmed;	       /* IP_R_PIN: the pin lost unusable CPUs */
	bool other_domain;     /* IP_R_OFF_*: not in its own domain */
	unsigned capacity, capacity2; /* IP_R_OFF_*: of the target domain, of its own */
	/* A move (or thread placement) whose target domain spans NUMA nodes,
	 * narrowed to the CPUs of its device's node (node, from numa_node and
	 * local_cpulist); nodes: how many nodes the domain's usable CPUs span. */
	bool numa;
	int node, nodes;
	/* dominant: a submitter on CPU dom_cpu has IP_DOMINANT_SHARE or more
	 * of the target domain's submissions over the window (dom_share), and
	 * a move there takes that CPU; dom_unusable: it was isolated, banned or
	 * off the device's node, dom_busy: it carries more interrupts than the
	 * least loaded CPU by the vector's own rate or more (another vector
	 * went there); either way the CPU was chosen as without one. */
	bool dominant;
	int dom_cpu;
	double dom_share;
	bool dom_unusable, dom_busy;
};

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
	/* The policy's window: per domain, the EWMA of the submission shares
	 * (win[0..win_nd)) and of the handled shares (win[win_nd..2*win_nd)),
	 * over win_n cycles (capped at the window), then per CPU the EWMA of
	 * its share of the submissions (win[2*win_nd..2*win_nd+win_nc)), which
	 * says whether one submitter dominates its domain. Owned. win_n = 0:
	 * no window, the next sample starts one. */
	double *win;
	int win_nd, win_nc, win_n;
	bool win_hd; /* the handled half holds: no move of ours since */
	/* The last two moves after submitters into another domain, 0 = none:
	 * when the one before was made and when the last was first asked for
	 * (a return to the idle domain forgets them; a pause that starts the
	 * window again does not: bursts that alternate between domains with
	 * pauses between them are not chased either), and since when the
	 * policy has wanted a third one that the alternation guard holds, 0
	 * = not held this cycle (vector_placement()). */
	uint64_t prev_follow_ns, last_follow_ns;
	uint64_t want_since_ns;
	/* Since the last move: when the policy first and last wanted a move
	 * after the submitters into another domain, 0 = not (forgotten after
	 * return_window without one). A follow counts from the first: a move
	 * that return_window or dwell held back was asked for that early. */
	uint64_t asked_ns, asked_last_ns;
	/* When the last follow was made (prev_follow_ns of the next one). */
	uint64_t follow_made_ns;
	/* The last two moves to a dominant submitter's CPU inside the domain
	 * (IP_R_DOMINANT_CPU), 0 = none, forgotten by a move into another
	 * domain; and the CPU that dominates the domain's submissions over
	 * the window and since when without a break, 0 = none
	 * (dominant_rehome()). */
	uint64_t prev_dom_ns, last_dom_ns;
	int dom_cpu;
	uint64_t dom_since_ns;
	/* When the last return to the efficiency domain after idle_grace was
	 * made (0 = none), and how many of them in a row a move after the
	 * submitters undid within return_window: each doubles idle_grace
	 * (idle_placement()). */
	uint64_t idle_return_ns;
	int idle_undone;
	/* The vector's interrupt rate over the window, for min_rate; none
	 * after a cycle without submissions. */
	double rate_w;
	bool have_rate_w;
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
	bool attached_by_us;	/* by a plan of ours (restore: struct ip_originals) */
	uint64_t attached_ns;	/* when we last attached it, 0 = never */
	uint64_t last_stall_ns; /* the last stall event, 0 = none */
	uint64_t hold_until_ns; /* auto attaches it again only after this */
	struct ip_why hold; /* why: IP_R_HOLD_* */
	/* An automatic attach is a trial: kept only if the device's I/O rate
	 * attached is not below its rate before (EWMA of the cycles before),
	 * and starts only once before_n cycles of that rate were seen. */
	double ios_before;
	int before_n;
	bool trial;
	double trial_sum;
	int trial_n;
};

/*
 * The policy's memory, written by ip_history_commit() (and irqctl pin, and
 * apply's findings about a vector: managed, where the kernel put it). The
 * original settings restore puts back are not here: they are apply's and
 * the state file's (struct ip_originals, apply.h).
 */
struct ip_history {
	size_t nr, alloc;
	struct ip_irq_hist *irqs; /* sorted by irq */
	size_t nr_cq;
	struct ip_cq_hist *cq;
	size_t nr_cqdev;
	struct ip_cqdev_hist *cqdev;
};

void ip_history_init(struct ip_history *h);
void ip_history_free(struct ip_history *h);
const struct ip_irq_hist *ip_history_find(const struct ip_history *h, unsigned irq);
/* As ip_snapshot_irq_next(), for ip_history_find(). */
const struct ip_irq_hist *ip_history_find_next(const struct ip_history *h, unsigned irq,
					       size_t *cursor);
/* Finds or creates; NULL on ENOMEM. */
struct ip_irq_hist *ip_history_get(struct ip_history *h, unsigned irq);
/* The line of @irq vanished: what was learned of it is of that line, and
 * a later IRQ of the number is another one. A runtime pin is the user's,
 * not the line's: it stays, so that the pin-irq-gone note is said once the
 * line leaves /proc/interrupts, and irqctl unpin still finds it. */
void ip_history_forget(struct ip_history *h, unsigned irq);
/* irqctl pin / unpin: a runtime pin wins over every rule. */
int ip_history_pin(struct ip_history *h, unsigned irq, const ip_cpuset *cpus);
void ip_history_unpin(struct ip_history *h, unsigned irq);
/* Find, or find-or-create (NULL on ENOMEM). */
const struct ip_cq_hist *ip_history_cq_find(const struct ip_history *h, pid_t pid);
struct ip_cq_hist *ip_history_cq_get(struct ip_history *h, pid_t pid);
const struct ip_cqdev_hist *ip_history_cqdev_find(const struct ip_history *h, const char *device);
struct ip_cqdev_hist *ip_history_cqdev_get(struct ip_history *h, const char *device);

struct ip_plan;
/* Records what the plan did (moves not marked failed by apply, the
 * managed explanations given, idle submitters) at @now_ns. */
int ip_history_commit(struct ip_history *h, const struct ip_plan *p, uint64_t now_ns);

/* ---- the plan ------------------------------------------------------- */

/* Room for one line of text about a record (report.c, apply.c's messages). */
#define IP_REASON_MAX 256

struct ip_move {
	unsigned irq;
	char name[64];		 /* action names of the line */
	struct ip_irq_ident ident; /* the line's vector: recorded with its original */
	char device[64];	 /* "sda", "mmcblk0+sda" for a shared line */
	ip_cpuset from;		 /* where its interrupts were handled */
	ip_cpuset from_affinity; /* smp_affinity_list as sampled */
	ip_cpuset to;
	ip_cpuset fallback; /* other CPUs of the target domain, for ENOSPC */
	bool ioapic;	    /* INTx line: new affinity applies at the next interrupt */
	bool failed;	    /* set by apply: not done, do not record it */
	int domain;	    /* index of the target domain in the topology, -1 */
	bool follows;	    /* after its submitters, into another domain */
	double return_window_s; /* the policy's, when it was decided */
	struct ip_why why;
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
	struct ip_why why;
};

struct ip_kept {
	unsigned irq;
	char name[64];
	/* For managed vectors: true the one cycle the long explanation is
	 * given, so the logger can log it once. Always true otherwise. */
	bool explained;
	bool managed;
	struct ip_why why;
};

struct ip_rq_action {
	char device[32];
	int from, value; /* from = -1 when unreadable */
	bool failed;
	struct ip_why why;
};

/* Attach a device to irqpilot_cq, or detach it. */
struct ip_cq_action {
	char device[32];
	unsigned major, minor;
	bool attach;
	bool trial; /* an automatic attach, judged by its I/O rate */
	bool failed; /* set by apply */
	struct ip_why why;
};

/* Something worth saying once that is not an action on one object. */
struct ip_note {
	char device[32]; /* the device it is about, or "" */
	struct ip_why why;
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
	bool idle; /* its submitters submitted nothing, or below min_rate */
	/* The window after this cycle (see struct ip_irq_hist): win (owned by
	 * the plan, 2 * nd values over n cycles) replaces it; without, it stays
	 * as it is. A pause of two cycles ends it (what the last workload did
	 * says nothing about where the next one submits). */
	int nd, nc, n;
	double *win;
	uint64_t want_since_ns; /* the alternation guard's, 0: none (ip_irq_hist) */
	uint64_t asked_ns, asked_last_ns; /* see ip_irq_hist */
	int dom_cpu;		 /* see ip_irq_hist */
	uint64_t dom_since_ns;	 /* see ip_irq_hist, 0: none dominates */
	double rate_w; /* see ip_irq_hist */
	bool have_rate_w;
};

struct ip_plan {
	int nr_moves, nr_threads, nr_kept, nr_rq, nr_notes, nr_states, nr_cq, nr_cq_obs;
	struct ip_move *moves;
	struct ip_thread_action *threads;
	struct ip_kept *kept;
	struct ip_rq_action *rq;
	struct ip_note *notes;
	struct ip_vec_state *states;
	struct ip_cq_action *cq;
	struct ip_cq_obs *cq_obs;
};

int ip_policy_decide(const struct ip_model *m, const struct ip_policy_config *cfg,
		     const struct ip_history *h, uint64_t now_ns, struct ip_plan *out);
void ip_plan_free(struct ip_plan *p);

#endif
