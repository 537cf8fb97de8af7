// SPDX-License-Identifier: GPL-2.0
/*
 * irqpilot_cq - per-hardware-queue completion threads for blk-mq disks
 *
 * blk_mq_complete_request_remote() decides where a request completes: inline
 * in the driver's interrupt, in a BLOCK softirq, or on the submitter after an
 * IPI. None of these can be placed by user space. For the disks irqpilotd
 * attaches, an ftrace hook sends each completion to a SCHED_FIFO kthread of
 * its hardware queue instead; irqpilotd then moves that thread with
 * sched_setaffinity() like any other task.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/major.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <uapi/linux/sched/types.h>

#include "compat.h"
#include "irqpilot_cq.h"

#define IPCQ_MAX_DEVS		64
#define IPCQ_POLL_MS		500
/*
 * The stall guard is what completes a redirected request when its thread
 * cannot run (the block layer's timeout skips COMPLETE requests), so it
 * cannot be turned off: stall_ms outside 1..IPCQ_STALL_MS_MAX is refused,
 * at insmod and in /sys/module/irqpilot_cq/parameters/stall_ms.
 */
#define IPCQ_STALL_MS_MAX	10000

static int ipcq_set_prio(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, MAX_RT_PRIO - 1);
}

static int ipcq_set_stall_ms(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, IPCQ_STALL_MS_MAX);
}

static const struct kernel_param_ops ipcq_prio_ops = {
	.set = ipcq_set_prio,
	.get = param_get_uint,
};

static const struct kernel_param_ops ipcq_stall_ms_ops = {
	.set = ipcq_set_stall_ms,
	.get = param_get_uint,
};

static unsigned int prio = 50;
module_param_cb(prio, &ipcq_prio_ops, &prio, 0644);
MODULE_PARM_DESC(prio, "SCHED_FIFO priority of new completion threads (1-99, default 50)");

static unsigned int stall_ms = 100;
module_param_cb(stall_ms, &ipcq_stall_ms_ops, &stall_ms, 0644);
MODULE_PARM_DESC(stall_ms,
		 "Complete on the original path once a request waited this long (1-10000 ms, default 100)");

/* Bits of ipcq_hwq.flags */
enum ipcq_hwq_flags {
	IPCQ_HWQ_STALLED,	/* the guard gave the queue back to the original path */
	IPCQ_HWQ_UNREPORTED,	/* a stall was counted: stall_work logs it, sends the event */
};

/* Bits of ipcq_dev.flags */
enum ipcq_dev_flags {
	IPCQ_DEV_ORPHAN,	/* the socket that owns it was closed: detach it */
};

struct ipcq_dev;

struct ipcq_hwq {
	struct llist_head list;		/* redirected requests, newest first */
	u64 head_ns;			/* when the list last became non-empty */
	unsigned long flags;		/* enum ipcq_hwq_flags */
	atomic_long_t fallbacks;
	atomic_long_t stalls;
	u64 stall_wait_ns;
	struct hrtimer watchdog;	/* armed while requests wait; hard irq */
	struct work_struct stall_work;	/* completes and reports what the guard found */
	struct task_struct *task;
	struct ipcq_dev *dev;
	unsigned int index;
	/* Written only by the thread. */
	u64 completions;
	u64 wakeups;
	u64 max_wait_ns;
	u64 *cpu_completions;		/* [nr_cpu_ids] */
} ____cacheline_aligned_in_smp;

struct ipcq_dev {
	struct list_head node;		/* in ipcq_devs, by devt */
	struct work_struct teardown;
	struct request_queue *q;
	ipcq_handle_t handle;
	char name[DISK_NAME_LEN];
	dev_t devt;
	unsigned long flags;		/* enum ipcq_dev_flags */
	/*
	 * IPCQ_ATTACH_F_OWNED: the socket that attached it. The net is only
	 * compared, never dereferenced.
	 */
	bool owned;
	const struct net *owner_net;
	u32 owner_portid;
	unsigned int nr_hwq;
	struct ipcq_hwq hwq[];
};

/* What the hot path searches: attached disks by request_queue. */
struct ipcq_table {
	struct rcu_head rcu;
	unsigned int nr;
	struct ipcq_dev *dev[];
};

static struct ipcq_table __rcu *ipcq_table;
/*
 * Held only for short, non-blocking steps: the ops run without genl_mutex
 * (parallel_ops), and nothing that waits for a completion thread, a disk
 * or an RCU grace period runs under it. That waiting is the teardown
 * work's, on ipcq_wq.
 */
static DEFINE_MUTEX(ipcq_lock);		/* attach, detach, ipcq_devs */
static LIST_HEAD(ipcq_devs);
static unsigned int ipcq_nr_devs;
static bool ipcq_closing;
static struct workqueue_struct *ipcq_wq;	/* teardown and reap */
static void ipcq_poll(struct work_struct *work);
static DECLARE_DELAYED_WORK(ipcq_poll_work, ipcq_poll);
static void ipcq_reap(struct work_struct *work);
static DECLARE_WORK(ipcq_reap_work, ipcq_reap);
static struct genl_family ipcq_family;

static u64 ipcq_limit_ns(void)
{
	return (u64)READ_ONCE(stall_ms) * NSEC_PER_MSEC;
}

#ifndef IPCQ_NO_HOOK
/* Callers hold rcu_read_lock() or run with preemption disabled. */
static struct ipcq_hwq *ipcq_hwq_of(struct request *rq)
{
	struct ipcq_table *t = rcu_dereference_check(ipcq_table, rcu_read_lock_any_held());
	unsigned int i, index;

	if (!t)
		return NULL;
	for (i = 0; i < t->nr; i++) {
		if (t->dev[i]->q != rq->q)
			continue;
		/* Queues added by blk_mq_update_nr_hw_queues() have no thread. */
		index = rq->mq_hctx->queue_num;
		return index < t->dev[i]->nr_hwq ? &t->dev[i]->hwq[index] : NULL;
	}
	return NULL;
}

/*
 * The replacement of blk_mq_complete_request_remote() for attached disks.
 * Like the original it marks the request complete, leaves polled requests to
 * the poller, and returns true when someone else will complete it.
 */
static noinline bool ipcq_redirect(struct request *rq)
{
	struct ipcq_hwq *hq;
	u64 now;

	WRITE_ONCE(rq->state, MQ_RQ_COMPLETE);
	if (rq->cmd_flags & REQ_POLLED)
		return false;

	rcu_read_lock();
	hq = ipcq_hwq_of(rq);
	if (!hq) {
		/* Detached since the hook chose us: the hook now passes it on. */
		rcu_read_unlock();
		return blk_mq_complete_request_remote(rq);
	}
	/*
	 * rq is COMPLETE, so its scheduler fields (fifo_time) and the softirq
	 * list node (ipi_list) are free until the driver completes it.
	 */
	now = ktime_get_ns();
	rq->fifo_time = now;
	/* Stamp before publishing so the hook never sees a stale head_ns. */
	if (llist_empty(&hq->list))
		WRITE_ONCE(hq->head_ns, now);
	if (llist_add(&rq->ipi_list, &hq->list)) {
		WRITE_ONCE(hq->head_ns, now);
		wake_up_process(hq->task);
		/*
		 * Not queued also while its callback runs, which may have seen
		 * the list empty: starting it again then is what keeps a
		 * waiting list from being left without a guard.
		 */
		if (!hrtimer_is_queued(&hq->watchdog))
			hrtimer_start(&hq->watchdog, ns_to_ktime(now + ipcq_limit_ns()),
				      HRTIMER_MODE_ABS_HARD);
	}
	rcu_read_unlock();
	return true;
}
#endif

/*
 * Complete what waits for the thread on the original path. Each request goes
 * through blk_mq_complete_request() -> blk_mq_complete_request_remote(), where
 * the hook lets the original run while the queue is marked stalled.
 */
static void ipcq_flush_original(struct ipcq_hwq *hq)
{
	struct llist_node *batch = llist_reverse_order(llist_del_all(&hq->list));
	struct request *pos, *next;

	llist_for_each_entry_safe(pos, next, batch, ipi_list)
		blk_mq_complete_request(pos);
}

/*
 * The oldest waiting request has waited @waited: the queue is stalled, and
 * stall_work completes and reports it. Called from the hook and from the
 * guard, which runs in hard interrupt context also on PREEMPT_RT: so only
 * bit operations, atomics and queue_work(), whose pool lock is a raw
 * spinlock that RT does not turn into a sleeping lock.
 */
static void ipcq_mark_stalled(struct ipcq_hwq *hq, u64 waited)
{
	if (!test_and_set_bit(IPCQ_HWQ_STALLED, &hq->flags)) {
		atomic_long_inc(&hq->stalls);
		WRITE_ONCE(hq->stall_wait_ns, waited);
		/* stall_work reads stall_wait_ns once it has seen the bit. */
		smp_mb__before_atomic();
		set_bit(IPCQ_HWQ_UNREPORTED, &hq->flags);
	}
	/*
	 * Also when the queue was stalled already: a request redirected just
	 * before the mark may have come after stall_work's flush. Not the
	 * local CPU's pool: that CPU may be the starved one.
	 */
	queue_work(system_unbound_wq, &hq->stall_work);
}

/*
 * The stall guard. A redirected request is COMPLETE, so the block layer's
 * timeout no longer covers it: if the thread is starved, nothing else would
 * ever complete it. When the oldest request has waited stall_ms, the queue
 * goes back to the original path until the thread runs again. The timer is
 * one of two checks: the hook makes the same one on every completion of the
 * queue (ipcq_route()), so a late timer alone does not hold requests back.
 *
 * An hrtimer in hard mode, because anything softer runs in a thread: on
 * PREEMPT_RT a timer_list expires in ktimers/N at SCHED_FIFO 1, below the
 * completion thread it guards and below any RT hog that starves it, so the
 * guard starved with the thread. Hard interrupt context on RT allows no
 * sleeping lock (spinlock_t, and so wake_up() on a waitqueue, a driver's
 * ->complete, bio completion). So the callback only looks, marks and hands
 * the completing to stall_work on the unbound workqueue, whose SCHED_OTHER
 * workers run on any CPU the hog leaves. It re-arms with hrtimer_start(),
 * never hrtimer_forward(): ipcq_redirect() may start the timer on another
 * CPU while this runs, and forwarding a queued timer corrupts its queue.
 */
static enum hrtimer_restart ipcq_watchdog(struct hrtimer *t)
{
	struct ipcq_hwq *hq = container_of(t, struct ipcq_hwq, watchdog);
	u64 limit = ipcq_limit_ns();
	u64 head, waited;

	if (llist_empty(&hq->list))
		return HRTIMER_NORESTART;
	/* head_ns was stamped before the list became non-empty. */
	smp_rmb();
	head = READ_ONCE(hq->head_ns);
	waited = ktime_get_ns() - head;
	if ((s64)waited < (s64)limit) {
		hrtimer_start(t, ns_to_ktime(head + limit), HRTIMER_MODE_ABS_HARD);
		return HRTIMER_NORESTART;
	}
	ipcq_mark_stalled(hq, waited);
	return HRTIMER_NORESTART;
}

#ifndef IPCQ_NO_HOOK
/*
 * A stalled queue still had requests waiting when a new one completed: the
 * driver's context completes those too, then @rq, on the original path.
 */
static noinline bool ipcq_rescue(struct request *rq)
{
	struct ipcq_hwq *hq;

	rcu_read_lock();
	hq = ipcq_hwq_of(rq);
	if (hq) {
		/* The hook found the oldest request overdue, or the queue stalled. */
		ipcq_mark_stalled(hq, ktime_get_ns() - READ_ONCE(hq->head_ns));
		ipcq_flush_original(hq);
	}
	rcu_read_unlock();
	return blk_mq_complete_request_remote(rq);
}

/* Called from the hook, preemption disabled. */
static unsigned long ipcq_route(struct ipcq_hwq *hq)
{
	bool waiting = !llist_empty(&hq->list);

	if (!test_bit(IPCQ_HWQ_STALLED, &hq->flags)) {
		if (!waiting)
			return (unsigned long)ipcq_redirect;
		/* head_ns was stamped before the list became non-empty. */
		smp_rmb();
		/* The second check of the guard, should the timer be late. */
		if ((s64)(ktime_get_ns() - READ_ONCE(hq->head_ns)) < (s64)ipcq_limit_ns())
			return (unsigned long)ipcq_redirect;
		return (unsigned long)ipcq_rescue;
	}
	if (waiting)
		return (unsigned long)ipcq_rescue;
	atomic_long_inc(&hq->fallbacks);
	return 0;
}

static void notrace ipcq_hook(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct request *rq = (struct request *)ipcq_arg0(fregs);
	struct ipcq_hwq *hq;
	unsigned long target = 0;

	preempt_disable_notrace();
	hq = ipcq_hwq_of(rq);
	if (hq)
		target = ipcq_route(hq);
	if (target)
		ipcq_set_ip(fregs, target);
	preempt_enable_notrace();
}

static struct ftrace_ops ipcq_fops = {
	.func = ipcq_hook,
	.flags = IPCQ_FTRACE_FLAGS,
};
#endif

static int ipcq_thread(void *arg)
{
	struct ipcq_hwq *hq = arg;
	struct request *rq, *next;
	struct llist_node *batch;
	unsigned int cpu;
	u64 now, wait;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		batch = llist_del_all(&hq->list);
		if (!batch) {
			/* Running again: the guard may give requests back. */
			if (test_bit(IPCQ_HWQ_STALLED, &hq->flags))
				clear_bit(IPCQ_HWQ_STALLED, &hq->flags);
			/* Detach stopped new arrivals before kthread_stop(). */
			if (kthread_should_stop())
				break;
			schedule();
			WRITE_ONCE(hq->wakeups, hq->wakeups + 1);
			continue;
		}
		__set_current_state(TASK_RUNNING);

		now = ktime_get_ns();
		batch = llist_reverse_order(batch);
		local_bh_disable();
		llist_for_each_entry_safe(rq, next, batch, ipi_list) {
			wait = now - rq->fifo_time;
			if ((s64)wait > (s64)hq->max_wait_ns)
				WRITE_ONCE(hq->max_wait_ns, wait);
			cpu = blk_mq_rq_cpu(rq);
			if (cpu < nr_cpu_ids)
				WRITE_ONCE(hq->cpu_completions[cpu], hq->cpu_completions[cpu] + 1);
			WRITE_ONCE(hq->completions, hq->completions + 1);
			rq->q->mq_ops->complete(rq);
		}
		local_bh_enable();
		cond_resched();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* Netlink messages */

static int ipcq_put_dev(struct sk_buff *skb, const struct ipcq_dev *dev)
{
	if (nla_put_string(skb, IPCQ_A_DISK, dev->name) ||
	    nla_put_u32(skb, IPCQ_A_MAJOR, MAJOR(dev->devt)) ||
	    nla_put_u32(skb, IPCQ_A_MINOR, MINOR(dev->devt)))
		return -EMSGSIZE;
	return 0;
}

static void ipcq_event(const struct ipcq_dev *dev, u32 event, const struct ipcq_hwq *hq, u64 wait)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &ipcq_family, 0, IPCQ_CMD_EVENT);
	if (!hdr)
		goto err;
	if (nla_put_u32(skb, IPCQ_A_EVENT, event) || ipcq_put_dev(skb, dev))
		goto err;
	if (event == IPCQ_EVENT_ATTACH && nla_put_u32(skb, IPCQ_A_NR_HWQ, dev->nr_hwq))
		goto err;
	if (hq && (nla_put_u32(skb, IPCQ_A_HWQ, hq->index) ||
		   nla_put_u64_64bit(skb, IPCQ_A_WAIT_NS, wait, IPCQ_A_PAD)))
		goto err;
	genlmsg_end(skb, hdr);
	/* -ESRCH only means nobody listens. */
	genlmsg_multicast(&ipcq_family, skb, 0, 0, GFP_KERNEL);
	return;
err:
	nlmsg_free(skb);
}

/*
 * What the guard cannot do in hard interrupt context: complete the backlog
 * on the original path, as the BLOCK softirq would (bottom halves off), and
 * report the stall, which allocates.
 */
static void ipcq_stall_work(struct work_struct *work)
{
	struct ipcq_hwq *hq = container_of(work, struct ipcq_hwq, stall_work);

	local_bh_disable();
	ipcq_flush_original(hq);
	local_bh_enable();
	/*
	 * Only the thread gives the queue back, once it runs and finds its
	 * list empty, and only a redirect wakes it; while the queue is
	 * stalled nothing is redirected. A thread that had emptied its list
	 * and looked at the bit just before the guard set it would sleep for
	 * good, and the queue stay on the original path: seen on 6.1 RT under
	 * TCG, a 120 ms stall before any hog, then 20,201 fallbacks and not
	 * one completion through the thread. So wake it. A starved thread
	 * is runnable already, and this changes nothing for it.
	 */
	wake_up_process(hq->task);
	if (!test_and_clear_bit(IPCQ_HWQ_UNREPORTED, &hq->flags))
		return;
	pr_warn_ratelimited("%s queue %u: thread starved for %llu ms, completing on the original path\n",
			    hq->dev->name, hq->index, READ_ONCE(hq->stall_wait_ns) / NSEC_PER_MSEC);
	ipcq_event(hq->dev, IPCQ_EVENT_STALL, hq, READ_ONCE(hq->stall_wait_ns));
}

/* Attach and detach */

/*
 * Replaces the table: add @add, drop @del. May fail only when adding.
 * Under ipcq_lock. A dropped disk may still be seen by a hook or redirect
 * until a grace period has passed: its teardown waits for that.
 */
static int ipcq_publish(struct ipcq_dev *add, struct ipcq_dev *del)
{
	struct ipcq_table *old = rcu_dereference_protected(ipcq_table, lockdep_is_held(&ipcq_lock));
	unsigned int i, n = old ? old->nr : 0;
	struct ipcq_table *t;

	/* Detach must not fail half way; the table is small. */
	t = kzalloc(struct_size(t, dev, n + 1), add ? GFP_KERNEL : GFP_KERNEL | __GFP_NOFAIL);
	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (old->dev[i] != del)
			t->dev[t->nr++] = old->dev[i];
	if (add)
		t->dev[t->nr++] = add;
	rcu_assign_pointer(ipcq_table, t);
	if (old)
		kfree_rcu(old, rcu);
	return 0;
}

/*
 * Stops the threads and lets go of the disk. It waits for each thread,
 * which a starved one makes long: never under ipcq_lock or genl_mutex.
 */
static void ipcq_free_dev(struct ipcq_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->nr_hwq; i++) {
		struct ipcq_hwq *hq = &dev->hwq[i];

		/*
		 * Nothing adds to the list any more: what waits on it is
		 * completed here, on the original path, rather than wait for
		 * a thread that may not run for a long time. As in the BLOCK
		 * softirq, drivers' ->complete runs with bottom halves off.
		 */
		local_bh_disable();
		ipcq_flush_original(hq);
		local_bh_enable();
		/*
		 * Lists are empty and stay so: the watchdog does not re-arm,
		 * but may queue stall_work until it is cancelled. Both go
		 * before the thread, because stall_work wakes it.
		 */
		hrtimer_cancel(&hq->watchdog);
		cancel_work_sync(&hq->stall_work);
		/* The thread returns only with an empty list. */
		if (hq->task)
			kthread_stop(hq->task);
		kfree(hq->cpu_completions);
	}
	if (!IS_ERR_OR_NULL(dev->handle))
		ipcq_close(dev->handle);
	kfree(dev);
}

static void ipcq_teardown(struct work_struct *work)
{
	struct ipcq_dev *dev = container_of(work, struct ipcq_dev, teardown);

	/* After this no hook or redirect can still see @dev. */
	synchronize_rcu();
	ipcq_free_dev(dev);
}

/* Under ipcq_lock. Returns at once: the teardown runs on ipcq_wq. */
static void ipcq_detach(struct ipcq_dev *dev, u32 event)
{
	ipcq_publish(NULL, dev);
	list_del(&dev->node);
	ipcq_nr_devs--;
	ipcq_event(dev, event, NULL, 0);
	queue_work(ipcq_wq, &dev->teardown);
}

static struct ipcq_dev *ipcq_find_dev(dev_t devt)
{
	struct ipcq_dev *dev;

	list_for_each_entry(dev, &ipcq_devs, node)
		if (dev->devt == devt)
			return dev;
	return NULL;
}

/* ipcq_devs stays sorted by devt: a LIST dump resumes by it. */
static void ipcq_insert_dev(struct ipcq_dev *new)
{
	struct ipcq_dev *dev;

	list_for_each_entry(dev, &ipcq_devs, node)
		if (dev->devt > new->devt)
			break;
	list_add_tail(&new->node, &dev->node);
}

/*
 * The disks irqpilotd leaves alone (ip_blockdev_is_virtual()) are refused
 * here too. Each is known by its fixed major, by the module of its
 * block_device_operations (all are modules in Debian's kernels), or by
 * the name its driver gives it, for a built-in driver with a dynamic
 * major:
 *   loop  drivers/block/loop.c     LOOP_MAJOR, "loop%d"; blk-mq
 *   dm    drivers/md/dm.c          dynamic, "dm-%d"; blk-mq when request-based
 *   md    drivers/md/md.c          MD_MAJOR, "md%d" / "md_d%d"; bio-based
 *   zram  drivers/block/zram/zram_drv.c  dynamic, "zram%d"; bio-based
 *   sr    drivers/scsi/sr.c        SCSI_CDROM_MAJOR, "sr%d"; blk-mq (SCSI)
 *   nbd   drivers/block/nbd.c      NBD_MAJOR, "nbd%d"; blk-mq
 *   ram   drivers/block/brd.c      RAMDISK_MAJOR, "ram%d"; bio-based
 * Stacked or virtual disks gain nothing from a completion thread, and
 * holding one open keeps dm and md from removing it (EBUSY).
 */
static const char *ipcq_refused(struct gendisk *disk)
{
	static const struct {
		unsigned int major;	/* 0: dynamic */
		const char *module;
		const char *prefix;
	} refused[] = {
		{ LOOP_MAJOR, "loop", "loop" },
		{ 0, "dm_mod", "dm-" },
		{ MD_MAJOR, "md_mod", "md" },
		{ 0, "zram", "zram" },
		{ SCSI_CDROM_MAJOR, "sr_mod", "sr" },
		{ NBD_MAJOR, "nbd", "nbd" },
		{ RAMDISK_MAJOR, "brd", "ram" },
	};
	struct module *owner = disk->fops ? disk->fops->owner : NULL;
	unsigned int i;
	size_t n;
	char c;

	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		if (refused[i].major && disk->major == refused[i].major)
			return refused[i].prefix;
		if (owner && !strcmp(module_name(owner), refused[i].module))
			return refused[i].prefix;
		n = strlen(refused[i].prefix);
		c = disk->disk_name[n];
		if (!strncmp(disk->disk_name, refused[i].prefix, n) && (isdigit(c) || c == '_'))
			return refused[i].prefix;
	}
	return NULL;
}

static int ipcq_start_thread(struct ipcq_hwq *hq)
{
	struct sched_attr attr = {
		.size = sizeof(attr),
		.sched_policy = SCHED_FIFO,
		.sched_priority = clamp_t(unsigned int, READ_ONCE(prio), 1, MAX_RT_PRIO - 1),
	};
	struct task_struct *task;

	/*
	 * Not kthread_bind(): that sets PF_NO_SETAFFINITY, and irqpilotd must
	 * be able to move the thread with sched_setaffinity().
	 */
	task = kthread_create(ipcq_thread, hq, "ipcq/%s:%u", hq->dev->name, hq->index);
	if (IS_ERR(task))
		return PTR_ERR(task);
	sched_setattr_nocheck(task, &attr);
	hq->task = task;
	wake_up_process(task);
	return 0;
}

/*
 * Opens and checks the disk and starts its threads, without ipcq_lock:
 * opening a disk may block. Not yet published.
 */
static struct ipcq_dev *ipcq_new_dev(dev_t devt, const char *name, struct netlink_ext_ack *extack)
{
	struct block_device *bdev;
	struct ipcq_dev *dev;
	const char *kind;
	unsigned int i, n;
	ipcq_handle_t h;
	int ret;

	h = ipcq_open(devt);
	if (IS_ERR(h)) {
		NL_SET_ERR_MSG(extack, "cannot open the disk");
		return ERR_CAST(h);
	}
	bdev = ipcq_bdev(h);
	ret = -EINVAL;
	if (bdev_is_partition(bdev)) {
		NL_SET_ERR_MSG(extack, "a partition, not a whole disk");
		goto err_close;
	}
	if (name && strcmp(name, bdev->bd_disk->disk_name)) {
		NL_SET_ERR_MSG(extack, "name and device number name different disks");
		goto err_close;
	}
	ret = -EOPNOTSUPP;
	kind = ipcq_refused(bdev->bd_disk);
	if (kind) {
		pr_info("not attaching %s: a %s disk, not a blk-mq hardware driver's\n",
			bdev->bd_disk->disk_name, kind);
		NL_SET_ERR_MSG(extack, "a loop, dm, md, zram, sr, nbd or ram disk: not attached");
		goto err_close;
	}
	if (!queue_is_mq(bdev_get_queue(bdev))) {
		NL_SET_ERR_MSG(extack, "not a blk-mq disk");
		goto err_close;
	}

	n = bdev_get_queue(bdev)->nr_hw_queues;
	ret = -ENOMEM;
	dev = kzalloc(struct_size(dev, hwq, n), GFP_KERNEL);
	if (!dev)
		goto err_close;
	dev->handle = h;
	dev->q = bdev_get_queue(bdev);
	strscpy(dev->name, bdev->bd_disk->disk_name, sizeof(dev->name));
	dev->devt = devt;
	dev->nr_hwq = n;
	INIT_WORK(&dev->teardown, ipcq_teardown);
	for (i = 0; i < n; i++) {
		struct ipcq_hwq *hq = &dev->hwq[i];

		init_llist_head(&hq->list);
		hrtimer_setup(&hq->watchdog, ipcq_watchdog, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS_HARD);
		INIT_WORK(&hq->stall_work, ipcq_stall_work);
		hq->dev = dev;
		hq->index = i;
	}
	for (i = 0; i < n; i++) {
		dev->hwq[i].cpu_completions = kcalloc(nr_cpu_ids, sizeof(u64), GFP_KERNEL);
		if (!dev->hwq[i].cpu_completions)
			goto err_free;
	}
	for (i = 0; i < n; i++) {
		ret = ipcq_start_thread(&dev->hwq[i]);
		if (ret) {
			NL_SET_ERR_MSG(extack, "cannot start a completion thread");
			goto err_free;
		}
	}
	return dev;

err_free:
	ipcq_free_dev(dev);
	return ERR_PTR(ret);
err_close:
	ipcq_close(h);
	return ERR_PTR(ret);
}

/* Under ipcq_lock: makes @dev visible to the hook, LIST and detach. */
static int ipcq_register_dev(struct ipcq_dev *dev, struct netlink_ext_ack *extack)
{
	int ret;

	if (ipcq_closing)
		return -ESHUTDOWN;
	if (ipcq_find_dev(dev->devt)) {
		NL_SET_ERR_MSG(extack, "disk is already attached");
		return -EEXIST;
	}
	if (ipcq_nr_devs >= IPCQ_MAX_DEVS) {
		NL_SET_ERR_MSG(extack, "too many attached disks");
		return -ENOSPC;
	}
	ret = ipcq_publish(dev, NULL);
	if (ret)
		return ret;
	ipcq_insert_dev(dev);
	ipcq_nr_devs++;
	ipcq_event(dev, IPCQ_EVENT_ATTACH, NULL, 0);
	queue_delayed_work(system_wq, &ipcq_poll_work, msecs_to_jiffies(IPCQ_POLL_MS));
	return 0;
}

/*
 * Disks that go away are noticed by polling: 6.1 has no notifier for module
 * code, and the open we hold keeps the disk, its queue and hctxs alive
 * until we let go, so noticing late is safe.
 */
static void ipcq_poll(struct work_struct *work)
{
	struct ipcq_dev *dev, *tmp;
	struct gendisk *disk;

	mutex_lock(&ipcq_lock);
	list_for_each_entry_safe(dev, tmp, &ipcq_devs, node) {
		disk = ipcq_bdev(dev->handle)->bd_disk;
		if (test_bit(GD_DEAD, &disk->state) || !disk_live(disk)) {
			pr_info("%s was removed; detached\n", dev->name);
			ipcq_detach(dev, IPCQ_EVENT_REMOVED);
		}
	}
	if (!list_empty(&ipcq_devs) && !ipcq_closing)
		queue_delayed_work(system_wq, &ipcq_poll_work, msecs_to_jiffies(IPCQ_POLL_MS));
	mutex_unlock(&ipcq_lock);
}

/* Detaches what a closed socket owned (ipcq_netlink_notify() marked it). */
static void ipcq_reap(struct work_struct *work)
{
	struct ipcq_dev *dev, *tmp;

	mutex_lock(&ipcq_lock);
	list_for_each_entry_safe(dev, tmp, &ipcq_devs, node) {
		if (!test_bit(IPCQ_DEV_ORPHAN, &dev->flags))
			continue;
		pr_info("%s: the socket that attached it was closed; detached\n", dev->name);
		ipcq_detach(dev, IPCQ_EVENT_DETACH);
	}
	mutex_unlock(&ipcq_lock);
}

/*
 * A netlink socket is released. 6.1's genl_family has no per-socket hook
 * for module code (.sock_priv came in 6.10), so the owner of an
 * IPCQ_ATTACH_F_OWNED disk is its portid, matched here. This may run in
 * any context the release does: only mark, and let ipcq_reap() detach.
 */
static int ipcq_netlink_notify(struct notifier_block *nb, unsigned long state, void *ptr)
{
	const struct netlink_notify *n = ptr;
	struct ipcq_table *t;
	bool found = false;
	unsigned int i;

	if (state != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC || !n->portid)
		return NOTIFY_DONE;
	rcu_read_lock();
	t = rcu_dereference(ipcq_table);
	for (i = 0; t && i < t->nr; i++) {
		struct ipcq_dev *dev = t->dev[i];

		if (dev->owned && dev->owner_portid == n->portid && dev->owner_net == n->net) {
			set_bit(IPCQ_DEV_ORPHAN, &dev->flags);
			found = true;
		}
	}
	rcu_read_unlock();
	if (found)
		queue_work(ipcq_wq, &ipcq_reap_work);
	return NOTIFY_OK;
}

static struct notifier_block ipcq_netlink_nb = {
	.notifier_call = ipcq_netlink_notify,
};

/* Generic netlink */

/*
 * CAP_SYS_ADMIN of the initial user namespace, for the socket's opener and
 * the sender (netlink_capable()): attaching holds a disk open and moves its
 * completions. GENL_ADMIN_PERM checked CAP_NET_ADMIN before this.
 */
static int ipcq_check_request(struct sk_buff *skb, struct genl_info *info)
{
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack, "needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	if (info->genlhdr->version != IPCQ_GENL_VERSION) {
		NL_SET_ERR_MSG(info->extack, "irqpilot_cq speaks family version 2");
		return -EPROTO;
	}
	return 0;
}

/* The module resolves no names: user space sends the device number. */
static int ipcq_parse_dev(struct genl_info *info, dev_t *devt, const char **name)
{
	struct nlattr **a = info->attrs;
	u32 major, minor;

	if (!a[IPCQ_A_MAJOR] || !a[IPCQ_A_MINOR]) {
		NL_SET_ERR_MSG(info->extack, "need IPCQ_A_MAJOR and IPCQ_A_MINOR");
		return -EINVAL;
	}
	major = nla_get_u32(a[IPCQ_A_MAJOR]);
	minor = nla_get_u32(a[IPCQ_A_MINOR]);
	*devt = MKDEV(major, minor);
	if (MAJOR(*devt) != major || MINOR(*devt) != minor) {
		NL_SET_ERR_MSG(info->extack, "no such device number");
		return -EINVAL;
	}
	*name = a[IPCQ_A_DISK] ? nla_data(a[IPCQ_A_DISK]) : NULL;
	return 0;
}

static int ipcq_nl_attach(struct sk_buff *skb, struct genl_info *info)
{
	struct ipcq_dev *dev;
	const char *name;
	u32 flags = 0;
	dev_t devt;
	int ret;

	ret = ipcq_check_request(skb, info);
	if (ret)
		return ret;
	ret = ipcq_parse_dev(info, &devt, &name);
	if (ret)
		return ret;
	if (info->attrs[IPCQ_A_FLAGS])
		flags = nla_get_u32(info->attrs[IPCQ_A_FLAGS]);
	if (flags & ~IPCQ_ATTACH_F_ALL) {
		NL_SET_ERR_MSG(info->extack, "unknown IPCQ_A_FLAGS bits");
		return -EINVAL;
	}
	dev = ipcq_new_dev(devt, name, info->extack);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	if (flags & IPCQ_ATTACH_F_OWNED) {
		/* The socket cannot be released while its request runs. */
		dev->owned = true;
		dev->owner_net = genl_info_net(info);
		dev->owner_portid = info->snd_portid;
	}
	mutex_lock(&ipcq_lock);
	ret = ipcq_register_dev(dev, info->extack);
	mutex_unlock(&ipcq_lock);
	if (ret)
		ipcq_free_dev(dev);
	return ret;
}

static int ipcq_nl_detach(struct sk_buff *skb, struct genl_info *info)
{
	struct ipcq_dev *dev;
	const char *name;
	dev_t devt;
	int ret;

	ret = ipcq_check_request(skb, info);
	if (ret)
		return ret;
	ret = ipcq_parse_dev(info, &devt, &name);
	if (ret)
		return ret;
	mutex_lock(&ipcq_lock);
	dev = ipcq_find_dev(devt);
	if (!dev) {
		NL_SET_ERR_MSG(info->extack, "disk is not attached");
		ret = -ENOENT;
	} else if (name && strcmp(name, dev->name)) {
		NL_SET_ERR_MSG(info->extack, "name and device number name different disks");
		ret = -EINVAL;
	} else {
		ipcq_detach(dev, IPCQ_EVENT_DETACH);
	}
	mutex_unlock(&ipcq_lock);
	return ret;
}

static int ipcq_put_cpu(struct sk_buff *skb, unsigned int cpu, u64 count)
{
	struct nlattr *e = nla_nest_start(skb, IPCQ_CPU_A_ENTRY);

	if (!e)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IPCQ_CPU_A_CPU, cpu) ||
	    nla_put_u64_64bit(skb, IPCQ_CPU_A_COUNT, count, IPCQ_CPU_A_PAD)) {
		nla_nest_cancel(skb, e);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, e);
	return 0;
}

/*
 * One message of a thread: its key and, with @counts, what follows from
 * *@pos on that fits: 0 is its counters (only ever in its first message),
 * CPU + 1 that CPU's count. Returns 0 once the thread is complete, else
 * -EMSGSIZE with *@pos where the next message goes on.
 */
static int ipcq_fill_thread(struct sk_buff *skb, struct netlink_callback *cb,
			    const struct ipcq_dev *dev, const struct ipcq_hwq *hq,
			    unsigned int *pos, bool counts, struct pid_namespace *ns)
{
	pid_t pid = task_pid_nr_ns(hq->task, ns);
	unsigned int start = *pos, cpu, done = 0;
	struct nlattr *nest;
	void *hdr;
	u64 c;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ipcq_family, NLM_F_MULTI, IPCQ_CMD_LIST);
	if (!hdr)
		return -EMSGSIZE;
	if (ipcq_put_dev(skb, dev) ||
	    nla_put_u32(skb, IPCQ_A_HWQ, hq->index) ||
	    nla_put_u32(skb, IPCQ_A_NR_HWQ, dev->nr_hwq) ||
	    (pid && nla_put_u32(skb, IPCQ_A_PID, pid)))
		goto err;
	if (!counts) {
		genlmsg_end(skb, hdr);
		return 0;
	}
	if (*pos == 0) {
		if (nla_put_u64_64bit(skb, IPCQ_A_COMPLETIONS, READ_ONCE(hq->completions),
				      IPCQ_A_PAD) ||
		    nla_put_u64_64bit(skb, IPCQ_A_WAKEUPS, READ_ONCE(hq->wakeups), IPCQ_A_PAD) ||
		    nla_put_u64_64bit(skb, IPCQ_A_MAX_WAIT_NS, READ_ONCE(hq->max_wait_ns),
				      IPCQ_A_PAD) ||
		    nla_put_u64_64bit(skb, IPCQ_A_STALLS, atomic_long_read(&hq->stalls),
				      IPCQ_A_PAD) ||
		    nla_put_u64_64bit(skb, IPCQ_A_FALLBACKS, atomic_long_read(&hq->fallbacks),
				      IPCQ_A_PAD))
			goto err;
		*pos = 1;
	}
	nest = nla_nest_start(skb, IPCQ_A_CPU_COMPLETIONS);
	if (!nest)
		goto err;
	for (cpu = *pos - 1; cpu < nr_cpu_ids; cpu++) {
		if (!cpu_possible(cpu))
			continue;
		c = READ_ONCE(hq->cpu_completions[cpu]);
		if (!c)
			continue;
		if (ipcq_put_cpu(skb, cpu, c))
			break;
		done++;
	}
	*pos = cpu + 1;
	/* A message that carries nothing new would make the dump loop. */
	if (cpu < nr_cpu_ids && !done && start)
		goto err;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return cpu < nr_cpu_ids ? -EMSGSIZE : 0;
err:
	*pos = start;
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * The dump resumes by key, never by index: cb->args[0] is 0 at the start,
 * 1 while it goes on, 2 once done; [1] is the device number, [2] the hw
 * queue and [3] the position (ipcq_fill_thread()) in the thread the last
 * message ended in.
 * ipcq_devs is sorted by device number, so a disk detached (or attached)
 * between two calls drops out (or in) without making any other thread
 * skipped or repeated.
 */
static int ipcq_nl_list(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genlmsghdr *gh = nlmsg_data(cb->nlh);
	bool counts = netlink_capable(cb->skb, CAP_SYS_ADMIN);
	/*
	 * The caller's pid namespace: the dump runs in the sender's sendmsg()
	 * and the reader's recvmsg(). A global pid would name another task
	 * there (or none), and sched_setaffinity() on it move that task; in a
	 * namespace that cannot see the thread, the message has no PID.
	 */
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct ipcq_dev *dev;
	unsigned int q, pos;
	int ret = 0;

	if (gh->version != IPCQ_GENL_VERSION) {
		NL_SET_ERR_MSG(cb->extack, "irqpilot_cq speaks family version 2");
		return -EPROTO;
	}
	if (cb->args[0] == 2)
		return 0;
	mutex_lock(&ipcq_lock);
	list_for_each_entry(dev, &ipcq_devs, node) {
		q = 0;
		pos = 0;
		if (cb->args[0] == 1) {
			if (dev->devt < (dev_t)cb->args[1])
				continue;
			if (dev->devt == (dev_t)cb->args[1]) {
				q = cb->args[2];
				pos = cb->args[3];
			}
		}
		for (; q < dev->nr_hwq; q++, pos = 0) {
			ret = ipcq_fill_thread(skb, cb, dev, &dev->hwq[q], &pos, counts, ns);
			if (ret) {
				cb->args[0] = 1;
				cb->args[1] = dev->devt;
				cb->args[2] = q;
				cb->args[3] = pos;
				goto out;
			}
		}
	}
	cb->args[0] = 2;
out:
	mutex_unlock(&ipcq_lock);
	/*
	 * All sent: 0 ends the dump now, NLMSG_DONE in this same skb. With
	 * skb->len the dump, and the reference to this module it holds, lasted
	 * until the caller read again: anyone could keep the module from
	 * unloading by sending a LIST and never reading it.
	 */
	if (!ret)
		return 0;
	/* A thread that does not fit an empty message would loop forever. */
	if (!skb->len)
		return ret;
	return skb->len;
}

static const struct nla_policy ipcq_policy[IPCQ_A_MAX + 1] = {
	[IPCQ_A_DISK] = { .type = NLA_NUL_STRING, .len = DISK_NAME_LEN - 1 },
	[IPCQ_A_MAJOR] = { .type = NLA_U32 },
	[IPCQ_A_MINOR] = { .type = NLA_U32 },
	[IPCQ_A_FLAGS] = { .type = NLA_U32 },
};

static const struct genl_small_ops ipcq_ops[] = {
	{
		.cmd = IPCQ_CMD_ATTACH,
		.doit = ipcq_nl_attach,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = IPCQ_CMD_DETACH,
		.doit = ipcq_nl_detach,
		.flags = GENL_ADMIN_PERM,
	},
	{
		/* Anyone may list; counts only to CAP_SYS_ADMIN. */
		.cmd = IPCQ_CMD_LIST,
		.dumpit = ipcq_nl_list,
	},
};

static const struct genl_multicast_group ipcq_mcgrps[] = {
	{ .name = IPCQ_GENL_MCGRP_EVENTS },
};

static struct genl_family ipcq_family = {
	.name = IPCQ_GENL_NAME,
	.version = IPCQ_GENL_VERSION,
	.maxattr = IPCQ_A_MAX,
	.policy = ipcq_policy,
	.module = THIS_MODULE,
	/* Not under genl_mutex, which every family of the machine shares. */
	.parallel_ops = true,
	.small_ops = ipcq_ops,
	.n_small_ops = ARRAY_SIZE(ipcq_ops),
	.mcgrps = ipcq_mcgrps,
	.n_mcgrps = ARRAY_SIZE(ipcq_mcgrps),
	/* A new family: every op gets strict validation of header and attributes. */
	.resv_start_op = 0,
};

#ifdef IPCQ_NO_HOOK
static int ipcq_hook_register(void)
{
	pr_err("this kernel has neither CONFIG_DYNAMIC_FTRACE_WITH_ARGS nor CONFIG_DYNAMIC_FTRACE_WITH_REGS: cannot hook blk_mq_complete_request_remote\n");
	return -EOPNOTSUPP;
}

/* Never called: without the hook the module does not load. */
static void ipcq_hook_unregister(void)
{
}
#else
static int ipcq_hook_register(void)
{
	int ret;

	ret = ftrace_set_filter_ip(&ipcq_fops, (unsigned long)blk_mq_complete_request_remote, 0, 0);
	if (ret) {
		pr_err("cannot trace blk_mq_complete_request_remote: %d\n", ret);
		return ret;
	}
	ret = register_ftrace_function(&ipcq_fops);
	if (ret) {
		if (ret == -EBUSY)
			pr_err("another module (a livepatch or hook) already modifies blk_mq_complete_request_remote\n");
		else
			pr_err("cannot hook blk_mq_complete_request_remote: %d\n", ret);
		goto err_filter;
	}
	return 0;

err_filter:
	ftrace_set_filter_ip(&ipcq_fops, (unsigned long)blk_mq_complete_request_remote, 1, 0);
	return ret;
}

/*
 * Waits (RCU tasks) until no CPU is in the hook or in
 * ipcq_redirect()/ipcq_rescue().
 */
static void ipcq_hook_unregister(void)
{
	unregister_ftrace_function(&ipcq_fops);
	ftrace_set_filter_ip(&ipcq_fops, (unsigned long)blk_mq_complete_request_remote, 1, 0);
}
#endif

static int __init ipcq_init(void)
{
	int ret;

	ipcq_wq = alloc_workqueue("ipcq", WQ_UNBOUND, 0);
	if (!ipcq_wq)
		return -ENOMEM;
	ret = ipcq_hook_register();
	if (ret)
		goto err_wq;
	ret = netlink_register_notifier(&ipcq_netlink_nb);
	if (ret)
		goto err_hook;
	ret = genl_register_family(&ipcq_family);
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	netlink_unregister_notifier(&ipcq_netlink_nb);
err_hook:
	ipcq_hook_unregister();
err_wq:
	destroy_workqueue(ipcq_wq);
	return ret;
}

static void __exit ipcq_exit(void)
{
	struct ipcq_dev *dev;

	/* No new attach, and the poller stops re-arming itself. */
	mutex_lock(&ipcq_lock);
	ipcq_closing = true;
	mutex_unlock(&ipcq_lock);
	/* Waits for a notifier call in progress; it may have queued a reap. */
	netlink_unregister_notifier(&ipcq_netlink_nb);
	cancel_delayed_work_sync(&ipcq_poll_work);

	/*
	 * Unhook first: once no CPU is in the hook or the redirect, nothing
	 * adds to the lists, and the threads drain them as they stop.
	 */
	ipcq_hook_unregister();
	synchronize_rcu();

	mutex_lock(&ipcq_lock);
	while (!list_empty(&ipcq_devs)) {
		dev = list_first_entry(&ipcq_devs, struct ipcq_dev, node);
		ipcq_detach(dev, IPCQ_EVENT_DETACH);
	}
	mutex_unlock(&ipcq_lock);
	/* Runs every teardown and reap still queued: no thread outlives us. */
	destroy_workqueue(ipcq_wq);
	genl_unregister_family(&ipcq_family);
	kfree(rcu_dereference_protected(ipcq_table, true));
}

module_init(ipcq_init);
module_exit(ipcq_exit);

MODULE_DESCRIPTION("irqpilot completion threads: per-hardware-queue, steerable blk-mq completion");
MODULE_AUTHOR("irqpilot developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPCQ_VERSION);
