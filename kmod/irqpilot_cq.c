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
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <uapi/linux/sched/types.h>

#include "irqpilot_cq.h"

static unsigned int prio = 50;
module_param(prio, uint, 0644);
MODULE_PARM_DESC(prio, "SCHED_FIFO priority of new completion threads (1-99, default 50)");

static unsigned int stall_ms = 100;
module_param(stall_ms, uint, 0644);
MODULE_PARM_DESC(stall_ms,
		 "Complete on the original path once a request waited this long (ms, 0: never)");

#define IPCQ_MAX_DEVS		64
#define IPCQ_POLL_MS		500
#define IPCQ_STALLED		0	/* bit in ipcq_hwq.flags */

/*
 * Kernel API differences, 6.1 to 7.3 (kmod/README.md cites the upstream
 * changes). ftrace_regs has accessors from 6.2; before that, WITH_ARGS
 * kernels (x86, s390) keep the arguments in ->regs.
 */
#if defined(CONFIG_DYNAMIC_FTRACE_WITH_ARGS)
#define IPCQ_FTRACE_FLAGS	FTRACE_OPS_FL_IPMODIFY
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define ipcq_arg0(fregs)	ftrace_regs_get_argument(fregs, 0)
#define ipcq_set_ip(fregs, ip)	ftrace_regs_set_instruction_pointer(fregs, ip)
#else
#define ipcq_arg0(fregs)	regs_get_kernel_argument(&(fregs)->regs, 0)
#define ipcq_set_ip(fregs, ip)	ftrace_instruction_pointer_set(fregs, ip)
#endif
#elif defined(CONFIG_DYNAMIC_FTRACE_WITH_REGS)
#define IPCQ_FTRACE_FLAGS	(FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS)
#define ipcq_arg0(fregs)	regs_get_kernel_argument(ftrace_get_regs(fregs), 0)
#define ipcq_set_ip(fregs, ip)	instruction_pointer_set(ftrace_get_regs(fregs), ip)
#else
#define IPCQ_NO_HOOK
#endif

#ifndef timer_container_of	/* renamed in 6.16 */
#define timer_container_of(var, t, field) from_timer(var, t, field)
#endif
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 84)	/* 6.2, in 6.1.y from 6.1.84 */
#define timer_delete_sync(t)	del_timer_sync(t)
#endif

/* A read-only open of the whole disk pins the gendisk and its queue. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
typedef struct file *ipcq_handle_t;
#define ipcq_open(devt)	bdev_file_open_by_dev(devt, BLK_OPEN_READ, NULL, NULL)
#define ipcq_bdev(h)	file_bdev(h)
#define ipcq_close(h)	fput(h)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
typedef struct bdev_handle *ipcq_handle_t;
#define ipcq_open(devt)	bdev_open_by_dev(devt, BLK_OPEN_READ, NULL, NULL)
#define ipcq_bdev(h)	((h)->bdev)
#define ipcq_close(h)	bdev_release(h)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
typedef struct block_device *ipcq_handle_t;
#define ipcq_open(devt)	blkdev_get_by_dev(devt, BLK_OPEN_READ, NULL, NULL)
#define ipcq_bdev(h)	(h)
#define ipcq_close(h)	blkdev_put(h, NULL)
#else
typedef struct block_device *ipcq_handle_t;
#define ipcq_open(devt)	blkdev_get_by_dev(devt, FMODE_READ, NULL)
#define ipcq_bdev(h)	(h)
#define ipcq_close(h)	blkdev_put(h, FMODE_READ)
#endif

struct ipcq_dev;

struct ipcq_hwq {
	struct llist_head list;		/* redirected requests, newest first */
	u64 head_ns;			/* when the list last became non-empty */
	unsigned long flags;		/* IPCQ_STALLED */
	atomic_long_t fallbacks;
	atomic_long_t stalls;
	u64 stall_wait_ns;
	struct timer_list watchdog;	/* runs while requests wait */
	struct work_struct stall_work;
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
	struct list_head node;		/* in ipcq_devs */
	struct request_queue *q;
	ipcq_handle_t handle;
	char name[DISK_NAME_LEN];
	u32 major;
	u32 minor;
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
static DEFINE_MUTEX(ipcq_lock);		/* attach, detach, ipcq_devs */
static LIST_HEAD(ipcq_devs);
static unsigned int ipcq_nr_devs;
static bool ipcq_closing;
static void ipcq_poll(struct work_struct *work);
static DECLARE_DELAYED_WORK(ipcq_poll_work, ipcq_poll);
static struct genl_family ipcq_family;

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
	unsigned int limit_ms;
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
		limit_ms = READ_ONCE(stall_ms);
		if (limit_ms && !timer_pending(&hq->watchdog))
			mod_timer(&hq->watchdog, jiffies + msecs_to_jiffies(limit_ms) + 1);
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
 * The stall guard. A redirected request is COMPLETE, so the block layer's
 * timeout no longer covers it: if the thread is starved, nothing else would
 * ever complete it. When the oldest request has waited stall_ms, the queue
 * goes back to the original path until the thread runs again.
 */
static void ipcq_watchdog(struct timer_list *t)
{
	struct ipcq_hwq *hq = timer_container_of(hq, t, watchdog);
	s64 limit = (s64)READ_ONCE(stall_ms) * NSEC_PER_MSEC;
	s64 waited;

	if (!limit || llist_empty(&hq->list))
		return;
	waited = ktime_get_ns() - READ_ONCE(hq->head_ns);
	if (waited < limit) {
		mod_timer(&hq->watchdog, jiffies + nsecs_to_jiffies(limit - waited) + 1);
		return;
	}
	if (!test_and_set_bit(IPCQ_STALLED, &hq->flags)) {
		atomic_long_inc(&hq->stalls);
		WRITE_ONCE(hq->stall_wait_ns, waited);
		/* Not the local CPU's pool: that CPU may be the starved one. */
		queue_work(system_unbound_wq, &hq->stall_work);
	}
	ipcq_flush_original(hq);
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
	if (hq)
		ipcq_flush_original(hq);
	rcu_read_unlock();
	return blk_mq_complete_request_remote(rq);
}

/* Called from the hook, preemption disabled. */
static unsigned long ipcq_route(struct ipcq_hwq *hq)
{
	if (!test_bit(IPCQ_STALLED, &hq->flags))
		return (unsigned long)ipcq_redirect;
	if (!llist_empty(&hq->list))
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
			if (test_bit(IPCQ_STALLED, &hq->flags))
				clear_bit(IPCQ_STALLED, &hq->flags);
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
	    nla_put_u32(skb, IPCQ_A_MAJOR, dev->major) ||
	    nla_put_u32(skb, IPCQ_A_MINOR, dev->minor))
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

static void ipcq_stall_work(struct work_struct *work)
{
	struct ipcq_hwq *hq = container_of(work, struct ipcq_hwq, stall_work);

	pr_warn_ratelimited("%s queue %u: thread starved for %llu ms, completing on the original path\n",
			    hq->dev->name, hq->index, READ_ONCE(hq->stall_wait_ns) / NSEC_PER_MSEC);
	ipcq_event(hq->dev, IPCQ_EVENT_STALL, hq, READ_ONCE(hq->stall_wait_ns));
}

/* Attach and detach, under ipcq_lock */

/* Replaces the table: add @add, drop @del. May fail only when adding. */
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
	if (del)
		/* After this no hook or redirect can still see @del. */
		synchronize_rcu();
	if (old)
		kfree_rcu(old, rcu);
	return 0;
}

static void ipcq_free_dev(struct ipcq_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->nr_hwq; i++) {
		/* The thread returns only with an empty list. */
		if (dev->hwq[i].task)
			kthread_stop(dev->hwq[i].task);
		/* Lists are empty and stay so: the watchdog does not re-arm. */
		timer_delete_sync(&dev->hwq[i].watchdog);
		cancel_work_sync(&dev->hwq[i].stall_work);
		kfree(dev->hwq[i].cpu_completions);
	}
	if (!IS_ERR_OR_NULL(dev->handle))
		ipcq_close(dev->handle);
	kfree(dev);
}

static void ipcq_detach(struct ipcq_dev *dev, u32 event)
{
	ipcq_publish(NULL, dev);
	list_del(&dev->node);
	ipcq_nr_devs--;
	ipcq_event(dev, event, NULL, 0);
	ipcq_free_dev(dev);
}

static struct ipcq_dev *ipcq_find_dev(dev_t devt)
{
	struct ipcq_dev *dev;

	list_for_each_entry(dev, &ipcq_devs, node)
		if (MKDEV(dev->major, dev->minor) == devt)
			return dev;
	return NULL;
}

/*
 * The name is resolved through sysfs, not /dev: /dev need not hold a node
 * for every disk (containers, minimal guests), but /sys/block always does.
 */
static int ipcq_name_to_devt(const char *name, dev_t *devt)
{
	unsigned int major, minor;
	char path[64], buf[24];
	struct file *f;
	loff_t pos = 0;
	ssize_t len;

	if (!*name || strchr(name, '/') || name[0] == '.')
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/block/%s/dev", name);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f)) {
		snprintf(path, sizeof(path), "/dev/%s", name);
		return lookup_bdev(path, devt) ? -ENODEV : 0;
	}
	len = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (len <= 0)
		return -ENODEV;
	buf[len] = '\0';
	if (sscanf(buf, "%u:%u", &major, &minor) != 2)
		return -ENODEV;
	*devt = MKDEV(major, minor);
	return 0;
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

static int ipcq_attach(dev_t devt, const char *name, struct netlink_ext_ack *extack)
{
	struct block_device *bdev;
	struct ipcq_dev *dev;
	unsigned int i, n;
	ipcq_handle_t h;
	int ret;

	if (ipcq_find_dev(devt)) {
		NL_SET_ERR_MSG(extack, "disk is already attached");
		return -EEXIST;
	}
	if (ipcq_nr_devs >= IPCQ_MAX_DEVS) {
		NL_SET_ERR_MSG(extack, "too many attached disks");
		return -ENOSPC;
	}
	h = ipcq_open(devt);
	if (IS_ERR(h)) {
		NL_SET_ERR_MSG(extack, "cannot open the disk");
		return PTR_ERR(h);
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
	dev->major = MAJOR(devt);
	dev->minor = MINOR(devt);
	dev->nr_hwq = n;
	for (i = 0; i < n; i++) {
		struct ipcq_hwq *hq = &dev->hwq[i];

		init_llist_head(&hq->list);
		timer_setup(&hq->watchdog, ipcq_watchdog, 0);
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
	ret = ipcq_publish(dev, NULL);
	if (ret)
		goto err_free;
	list_add_tail(&dev->node, &ipcq_devs);
	ipcq_nr_devs++;
	ipcq_event(dev, IPCQ_EVENT_ATTACH, NULL, 0);
	queue_delayed_work(system_wq, &ipcq_poll_work, msecs_to_jiffies(IPCQ_POLL_MS));
	return 0;

err_free:
	ipcq_free_dev(dev);
	return ret;
err_close:
	ipcq_close(h);
	return ret;
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

/* Generic netlink */

static int ipcq_parse_dev(struct genl_info *info, dev_t *devt, const char **name)
{
	struct nlattr **a = info->attrs;
	int ret;

	*name = a[IPCQ_A_DISK] ? nla_data(a[IPCQ_A_DISK]) : NULL;
	if (a[IPCQ_A_MAJOR] && a[IPCQ_A_MINOR]) {
		*devt = MKDEV(nla_get_u32(a[IPCQ_A_MAJOR]), nla_get_u32(a[IPCQ_A_MINOR]));
		return 0;
	}
	if (!*name) {
		NL_SET_ERR_MSG(info->extack, "need IPCQ_A_DISK or IPCQ_A_MAJOR and IPCQ_A_MINOR");
		return -EINVAL;
	}
	ret = ipcq_name_to_devt(*name, devt);
	if (ret)
		NL_SET_ERR_MSG(info->extack, "no such disk");
	return ret;
}

static int ipcq_nl_attach(struct sk_buff *skb, struct genl_info *info)
{
	const char *name;
	dev_t devt;
	int ret;

	ret = ipcq_parse_dev(info, &devt, &name);
	if (ret)
		return ret;
	mutex_lock(&ipcq_lock);
	ret = ipcq_closing ? -ESHUTDOWN : ipcq_attach(devt, name, info->extack);
	mutex_unlock(&ipcq_lock);
	return ret;
}

static int ipcq_nl_detach(struct sk_buff *skb, struct genl_info *info)
{
	struct ipcq_dev *dev;
	const char *name;
	dev_t devt;
	int ret;

	ret = ipcq_parse_dev(info, &devt, &name);
	if (ret)
		return ret;
	mutex_lock(&ipcq_lock);
	dev = ipcq_find_dev(devt);
	if (dev)
		ipcq_detach(dev, IPCQ_EVENT_DETACH);
	mutex_unlock(&ipcq_lock);
	if (!dev) {
		NL_SET_ERR_MSG(info->extack, "disk is not attached");
		return -ENOENT;
	}
	return 0;
}

static int ipcq_fill_thread(struct sk_buff *skb, struct netlink_callback *cb,
			    const struct ipcq_dev *dev, const struct ipcq_hwq *hq)
{
	struct nlattr *nest;
	unsigned int cpu;
	void *hdr;
	u64 c;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &ipcq_family, NLM_F_MULTI, IPCQ_CMD_LIST);
	if (!hdr)
		return -EMSGSIZE;
	if (ipcq_put_dev(skb, dev) ||
	    nla_put_u32(skb, IPCQ_A_HWQ, hq->index) ||
	    nla_put_u32(skb, IPCQ_A_NR_HWQ, dev->nr_hwq) ||
	    nla_put_u32(skb, IPCQ_A_PID, task_pid_nr(hq->task)) ||
	    nla_put_u64_64bit(skb, IPCQ_A_COMPLETIONS, READ_ONCE(hq->completions), IPCQ_A_PAD) ||
	    nla_put_u64_64bit(skb, IPCQ_A_WAKEUPS, READ_ONCE(hq->wakeups), IPCQ_A_PAD) ||
	    nla_put_u64_64bit(skb, IPCQ_A_MAX_WAIT_NS, READ_ONCE(hq->max_wait_ns), IPCQ_A_PAD) ||
	    nla_put_u64_64bit(skb, IPCQ_A_STALLS, atomic_long_read(&hq->stalls), IPCQ_A_PAD) ||
	    nla_put_u64_64bit(skb, IPCQ_A_FALLBACKS, atomic_long_read(&hq->fallbacks),
			      IPCQ_A_PAD))
		goto err;
	nest = nla_nest_start(skb, IPCQ_A_CPU_COMPLETIONS);
	if (!nest)
		goto err;
	for_each_possible_cpu(cpu) {
		c = READ_ONCE(hq->cpu_completions[cpu]);
		/* Pads, if any, are type 0, which is no CPU. */
		if (c && nla_put_u64_64bit(skb, cpu + 1, c, 0))
			goto err;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
err:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* cb->args[0]: disks done; cb->args[1]: threads done of the next disk */
static int ipcq_nl_list(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned long skip = cb->args[0], n = 0, q;
	struct ipcq_dev *dev;
	int ret = 0;

	mutex_lock(&ipcq_lock);
	list_for_each_entry(dev, &ipcq_devs, node) {
		if (n++ < skip)
			continue;
		for (q = cb->args[1]; q < dev->nr_hwq; q++) {
			ret = ipcq_fill_thread(skb, cb, dev, &dev->hwq[q]);
			if (ret) {
				cb->args[1] = q;
				goto out;
			}
		}
		cb->args[0]++;
		cb->args[1] = 0;
	}
out:
	mutex_unlock(&ipcq_lock);
	/* A thread that does not fit an empty message would loop forever. */
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

static const struct nla_policy ipcq_policy[IPCQ_A_MAX + 1] = {
	[IPCQ_A_DISK] = { .type = NLA_NUL_STRING, .len = DISK_NAME_LEN - 1 },
	[IPCQ_A_MAJOR] = { .type = NLA_U32 },
	[IPCQ_A_MINOR] = { .type = NLA_U32 },
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
	.small_ops = ipcq_ops,
	.n_small_ops = ARRAY_SIZE(ipcq_ops),
	.mcgrps = ipcq_mcgrps,
	.n_mcgrps = ARRAY_SIZE(ipcq_mcgrps),
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0)
	/* A new family: every op gets strict validation of header and attributes. */
	.resv_start_op = 0,
#endif
};

static int __init ipcq_init(void)
{
#ifdef IPCQ_NO_HOOK
	pr_err("this kernel has neither CONFIG_DYNAMIC_FTRACE_WITH_ARGS nor CONFIG_DYNAMIC_FTRACE_WITH_REGS: cannot hook blk_mq_complete_request_remote\n");
	return -EOPNOTSUPP;
#else
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
	ret = genl_register_family(&ipcq_family);
	if (ret)
		goto err_hook;
	return 0;

err_hook:
	unregister_ftrace_function(&ipcq_fops);
err_filter:
	ftrace_set_filter_ip(&ipcq_fops, (unsigned long)blk_mq_complete_request_remote, 1, 0);
	return ret;
#endif
}

static void __exit ipcq_exit(void)
{
#ifndef IPCQ_NO_HOOK
	struct ipcq_dev *dev;

	/* No new attach, and the poller stops re-arming itself. */
	mutex_lock(&ipcq_lock);
	ipcq_closing = true;
	mutex_unlock(&ipcq_lock);
	cancel_delayed_work_sync(&ipcq_poll_work);

	/*
	 * Unhook first: this waits (RCU tasks) until no CPU is in the hook or
	 * in ipcq_redirect()/ipcq_rescue(). Then nothing adds to the lists,
	 * and the threads drain them as they stop.
	 */
	unregister_ftrace_function(&ipcq_fops);
	ftrace_set_filter_ip(&ipcq_fops, (unsigned long)blk_mq_complete_request_remote, 1, 0);
	synchronize_rcu();

	mutex_lock(&ipcq_lock);
	while (!list_empty(&ipcq_devs)) {
		dev = list_first_entry(&ipcq_devs, struct ipcq_dev, node);
		ipcq_detach(dev, IPCQ_EVENT_DETACH);
	}
	mutex_unlock(&ipcq_lock);
	genl_unregister_family(&ipcq_family);
	kfree(rcu_dereference_protected(ipcq_table, true));
#endif
}

module_init(ipcq_init);
module_exit(ipcq_exit);

MODULE_DESCRIPTION("irqpilot completion threads: per-hardware-queue, steerable blk-mq completion");
MODULE_AUTHOR("irqpilot developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPCQ_VERSION);
