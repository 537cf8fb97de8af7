/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_ENGINE_H
#define IRQPILOT_ENGINE_H

/*
 * One cycle of the pipeline: sample -> derive -> decide -> act. The daemon,
 * --oneshot, --replay and the tests all run cycles through this, so they
 * cannot drift apart. Reporting is left to the caller.
 */

#include <stdbool.h>
#include <stdint.h>

#include "irqpilot/apply.h"
#include "irqpilot/config.h"
#include "irqpilot/diag.h"
#include "irqpilot/model.h"
#include "irqpilot/policy.h"
#include "irqpilot/root.h"
#include "irqpilot/sample.h"

struct ip_engine_opts {
	bool dry_run;
	/*
	 * Replays cannot be written to, so moves are simulated: a vector the
	 * policy moved is taken to be where it was moved, and its interrupts
	 * to fire there, until the recording shows it elsewhere. This is what
	 * lets a replay show convergence and the absence of ping-pong.
	 */
	bool simulate;
	bool live_counters;
	struct ip_cpu_overrides overrides; /* [cpus] performance/efficiency */
	const struct ip_apply_ops *ops;    /* NULL: the real ones */
};

struct ip_engine;

/* The result of one cycle; valid until the next ip_engine_step(). */
struct ip_step {
	int index;
	uint64_t now_ns;
	struct ip_model model;   /* model.prev is NULL on the first cycle */
	struct ip_plan plan;     /* empty on the first cycle: no rates yet */
	struct ip_apply_results results;
	bool decided;
};

/* The real writers on the live root; on any other root, files are written
 * into the tree and thread changes never reach the kernel. */
void ip_engine_ops_for_root(struct ip_root *r, struct ip_apply_ops *ops);

/* @cfg is borrowed and must outlive the engine (see ip_engine_set_config). */
int ip_engine_new(struct ip_root *r, const struct ip_policy_config *cfg, const struct ip_engine_opts *o,
		  struct ip_engine **out);
void ip_engine_free(struct ip_engine *e);
void ip_engine_set_root(struct ip_engine *e, struct ip_root *r);
void ip_engine_set_config(struct ip_engine *e, const struct ip_policy_config *cfg);
void ip_engine_set_dry_run(struct ip_engine *e, bool dry_run);
/* Write-ahead of the originals (struct ip_apply_ops.record). */
void ip_engine_set_record(struct ip_engine *e, int (*fn)(void *ctx, const struct ip_originals *o),
			  void *ctx);
/* The context of the real writers (struct ip_apply_live, borrowed): where
 * irqpilot_cq attaches go. Ignored when the engine writes into a tree or
 * was given its ops. */
void ip_engine_set_live(struct ip_engine *e, struct ip_apply_live *live);
bool ip_engine_dry_run(const struct ip_engine *e);
/* Drop cached topology and storage: hot-plug. */
void ip_engine_invalidate(struct ip_engine *e);
/* The policy's memory (policy.h). */
struct ip_history *ip_engine_history(struct ip_engine *e);
/* The original settings, for restore and the state file (apply.h). */
struct ip_originals *ip_engine_originals(struct ip_engine *e);
struct ip_sampler *ip_engine_sampler(struct ip_engine *e);
/* Writes back what IRQ @irq had before our first write, if anything was
 * recorded (irqctl unpin of an IRQ the policy does not place). */
int ip_engine_restore_irq(struct ip_engine *e, unsigned irq, struct ip_apply_results *res);
struct ip_root *ip_engine_root(struct ip_engine *e);
/* The writers the engine uses. */
const struct ip_apply_ops *ip_engine_ops(const struct ip_engine *e);
/*
 * irqpilot_cq reported a stall of queue @hwq of @major:@minor at @at_ns: the
 * next step's snapshot carries it (struct ip_cq_thread.stalled_ns) for the
 * policy to act on. -ENOMEM if it could not be kept.
 */
int ip_engine_stall(struct ip_engine *e, unsigned major, unsigned minor, int hwq, uint64_t at_ns,
		    uint64_t wait_ns);
int ip_engine_step(struct ip_engine *e, struct ip_step **out, struct ip_diag *d);
/* The last completed step, or NULL. */
const struct ip_step *ip_engine_last(const struct ip_engine *e);
/* Write back every original setting (SIGTERM, --restore), also in a dry
 * run; records whose restore failed stay in the originals. */
int ip_engine_restore(struct ip_engine *e, struct ip_apply_results *res);

#endif
