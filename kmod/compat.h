/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences irqpilot_cq.c builds across, 6.1 to 7.3. Every
 * version #if of the module is here; kmod/README.md cites the upstream
 * change each one follows.
 */
#ifndef IPCQ_COMPAT_H
#define IPCQ_COMPAT_H

#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/hrtimer.h>
#include <linux/version.h>

/*
 * The hook. ftrace_regs has accessors from 6.2; before that, WITH_ARGS
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

/* hrtimer_setup() came in 6.13 and replaces hrtimer_init(), since removed. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
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

#endif /* IPCQ_COMPAT_H */
