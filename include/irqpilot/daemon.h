/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_DAEMON_H
#define IRQPILOT_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include "irqpilot/config.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/engine.h"
#include "irqpilot/log.h"
#include "irqpilot/metrics.h"
#include "irqpilot/protocol.h"
#include "irqpilot/root.h"

struct ip_state;
struct ip_watch;

/* irqpilotd's exit statuses (irqpilotd(8), EXIT STATUS). */
enum {
	IP_EXIT_OK = 0,
	IP_EXIT_FAILURE = 1,
	IP_EXIT_USAGE = 2,   /* bad option or invalid policy file */
	IP_EXIT_REFUSED = 3, /* another instance, privilege, irqbalance */
};

#define IP_RUNTIME_DIR_DEFAULT "/run/irqpilot"
/* Idle without a perf wakeup, a full cycle runs this often (on a watched
 * tree, only while it is written: struct ip_daemon's still): the probe
 * between them (idle.h) sees I/O and CPUs, uevents and clients kick a
 * cycle, so what only a full cycle sees is another's affinity write. */
#define IP_IDLE_FULL_S 60.0
#define IP_IDLE_AFTER_CYCLES 3
#define IP_STATE_DIR_DEFAULT "/var/lib/irqpilot"
/* The connection table: IP_MAX_CLIENTS in all, at most IP_MAX_CLIENTS_PER_UID
 * of them from one uid other than root's, whose requests always get a slot
 * (the oldest idle reader makes room). An idle client is cut off after
 * IP_CLIENT_TIMEOUT_S, or IP_CLIENT_TIMEOUT_FULL_S once the table is full. */
#define IP_MAX_CLIENTS 32
#define IP_MAX_CLIENTS_PER_UID 8
#define IP_CLIENT_TIMEOUT_S 30
#define IP_CLIENT_TIMEOUT_FULL_S 2
/* IP_CQ_STALL_WINDOW_S and IP_CQ_STALL_HOLD_S: policy.h, which acts on stalls. */

struct ip_daemon_opts {
	const char *config_path;
	bool config_explicit; /* --config given: a missing file is an error */
	const char *root;
	const char *runtime_dir;
	const char *state_dir; /* StateDirectory=: where irqctl capture may write */
	bool foreground;
	bool dry_run;        /* --dry-run: wins over [daemon] dry_run */
	double interval_s;   /* --interval, 0 = the policy file's */
};

/*
 * What the daemon already said, so that each message is logged once: the
 * one "log once" of irqpilotd (daemon.c's said()). @key names what it is
 * about ("irq 45", a note's text), @what what was said of it (a move's
 * target, an error's errno); the same key with a new @what is said again.
 * An entry about an object (obj) is pruned once the object is gone from a
 * snapshot, so a new IRQ, thread or disk of the same name is news again.
 */
enum ip_said_obj { IP_SAID_NONE = 0, IP_SAID_IRQ, IP_SAID_PID, IP_SAID_DEV };

struct ip_said {
	enum ip_said_obj obj;
	unsigned irq;
	pid_t pid;
	char device[32];
	char *key, *what; /* owned */
};

struct ip_daemon {
	struct ip_daemon_opts o;
	sd_event *ev;
	struct ip_root *root;
	struct ip_root *sysroot; /* the real "/", for peers' credentials */
	struct ip_config cfg;
	struct ip_engine *engine;
	struct ip_log log;
	int lock_fd, listen_fd;
	int irqs_lock_fd; /* ip_root_lock_irqs() of root, -1 none */
	bool socket_activated;
	sd_event_source *timer, *listen_src;
	/* Kept for a connection that finds every other fd in use, to tell it
	 * so (spare_fd, -1 none); accept_pause: the listening socket is not
	 * watched for a moment when not even that fd could be had. */
	int spare_fd;
	sd_event_source *accept_pause;
	sd_device_monitor *monitor;
	char *socket_path, *lock_path, *state_path;
	struct ip_state *state; /* the originals on disk (state.h) */
	bool idle;
	unsigned quiet_cycles;
	/* The held cycle (idle.h): settled cycles in a row under I/O, and
	 * whether the timer now runs at the hold's period. */
	unsigned settled_cycles;
	bool holding;
	/* The idle back-off's probe: /proc/diskstats' completed I/Os at the
	 * last look (valid while idle), and when the last full cycle ran. */
	bool probe_valid;
	uint64_t probe_ios, last_step_usec;
	/* The perf idle wakeup (idle.h): a source per fd of the counters'
	 * (wake_gen: which set), enabled only while armed. */
	sd_event_source **wake_src;
	int nr_wake_src;
	unsigned wake_gen;
	bool wake_armed;
	/* The watched tree (watch.h): on a --root tree whose files can be
	 * watched, an idle daemon probes when the probe's files change, not
	 * on a timer. watch_src is enabled only while it waits so;
	 * last_look_usec is the last probe or cycle, to probe at most once an
	 * interval. */
	struct ip_watch *watch;
	sd_event_source *watch_src;
	uint64_t last_look_usec;
	/* The still tree: on a watched tree the minute's full cycle runs only
	 * if a file every full cycle reads (ip_sampler_activity_paths()) was
	 * written since the last one began (last_step_real_ns, CLOCK_REALTIME:
	 * the files' ctime's clock). While none was (still), act watches them
	 * and act_src is enabled, with no timer: a still tree costs nothing,
	 * as an idle machine does with perf. */
	struct ip_watch *act;
	sd_event_source *act_src;
	int64_t last_step_real_ns;
	bool still;
	bool ready;
	/* the STATUS= last sent: sent again only when it changes, so that a
	 * steady cycle does not wake the service manager */
	char status[512];
	struct ip_client *clients; /* the connection table, oldest first */
	int nr_clients;
	gid_t admin_gid; /* [control] admin_group, or IP_PROTO_NO_GROUP */
	unsigned cycles, moves_total;
	char last_move[IP_REASON_MAX];
	unsigned last_move_cycle; /* the cycle that made it, for "within N cycles" */
	struct ip_said *said;
	size_t nr_said;
	/* irqpilot_cq: the client (live.cq) and its event source while the
	 * module is loaded; cq_absent_logged so its absence is said once. The
	 * engine's writers attach on live.cq, owned (apply.h): closing it, or
	 * the daemon's death, detaches what it attached. */
	struct ip_apply_live live;
	sd_event_source *cq_src;
	bool cq_absent_logged;
	/* irqctl capture: one step per cycle until done */
	char *cap_dir;
	int cap_fd; /* cap_dir, opened below state_dir */
	int cap_left, cap_step;
	struct ip_sampler *cap_sampler;
	/* irqctl ban / unban: changes to the policy file's [cpus] banned
	 * (conf_banned), kept across a reload, lost at restart. The policy's
	 * banned set is (conf_banned | ban_add) & ~ban_del. */
	ip_cpuset conf_banned, ban_add, ban_del;
	/* the running policy was read from the default file, not the built-in
	 * one: a reload that finds the file gone keeps it */
	bool config_from_file;
	/* irqctl metrics and [daemon] metrics_textfile: counters over the
	 * daemon's life (they survive a reload); textfile_failed while its
	 * last write failed, so that a failure is logged once */
	struct ip_metrics metrics;
	bool textfile_failed;
};

int ip_daemon_run(const struct ip_daemon_opts *o);
/* ip_root_lock_irqs() of @r into *@fd, refused (-EBUSY, said in @diag)
 * while another irqpilotd changes @r's IRQs: with another runtime
 * directory than @runtime_dir each would record the other's moves as
 * originals. Taken by the daemon, --restore and --oneshot. A lock held
 * by another user's process is gone past with a warning to @log (NULL:
 * stderr, for --restore and --oneshot). */
int ip_daemon_lock_irqs(struct ip_root *r, const char *runtime_dir, struct ip_log *log, int *fd,
			struct ip_diag *diag);
/*
 * What --oneshot owns while it writes, as a daemon does: the runtime
 * directory's lock and the root's IRQs' (-EBUSY while a daemon runs), and
 * the state file, whose originals @e takes over and to which each new one
 * is saved before its write: --restore, or the daemon started next, puts
 * them back. Refused (-EBUSY, -EXDEV) for a file of another root or with
 * records that do not parse; @diag says why.
 */
struct ip_owned {
	struct ip_state *state;
	int lock_fd, irqs_fd;
};
int ip_daemon_own(const char *runtime_dir, struct ip_root *r, struct ip_engine *e, struct ip_owned *o,
		  struct ip_diag *diag);
void ip_daemon_owned_free(struct ip_owned *o);
/* --restore: write back what the state file recorded, then remove it. */
int ip_daemon_restore(const struct ip_daemon_opts *o);
/* The sampling interval: --interval's, else the policy file's. */
double ip_daemon_interval_s(const struct ip_daemon *d);
/* The idle back-off's full cycle (idle.h): a minute, or the interval if
 * that is longer. */
double ip_daemon_idle_full_s(const struct ip_daemon *d);
/* Sample again soon (hot-plug, irqctl pin): within @delay_us. */
void ip_daemon_kick(struct ip_daemon *d, uint64_t delay_us);
/* The engine's submission counters (counters.h): perf, task sampling, a
 * recording. */
struct ip_counters *ip_daemon_counters(struct ip_daemon *d);
/* The policy's banned set from the file's and irqctl's (see ban_add). */
void ip_daemon_apply_bans(struct ip_daemon *d);
/* control.c: IRQ @irq goes back to its original affinity (*@did, to
 * *@restored) unless a storage vector or an [irq] rule claims it; the log
 * says @why ("unpin", "reload"). */
void ip_daemon_release(struct ip_daemon *d, unsigned irq, const char *why, ip_cpuset *restored, bool *did);
/* Loads the policy file; on success it replaces the running one. */
int ip_daemon_reload(struct ip_daemon *d, struct ip_diag *diag);
/* The gid of @c's [control] admin_group (IP_PROTO_NO_GROUP when unset), or
 * an error naming @path, the key and the group when this machine has no
 * such group: what the daemon refuses at start and on reload. */
int ip_daemon_admin_group(const struct ip_config *c, const char *path, gid_t *gid, struct ip_diag *diag);

/* control.c: one request, one reply written to @out. */
void ip_control_handle(struct ip_daemon *d, const struct ip_request *req, FILE *out);
/* control.c: the metrics as irqctl metrics prints them (malloc()ed), or
 * NULL when out of memory. */
char *ip_control_metrics_text(struct ip_daemon *d, size_t *len);
/* control.c: writes them to [daemon] metrics_textfile, if set; a failure
 * is logged once, until a write succeeds again. */
void ip_control_metrics_textfile(struct ip_daemon *d);

#endif
