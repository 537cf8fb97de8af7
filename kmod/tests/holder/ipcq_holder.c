// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only: holds FTRACE_OPS_FL_IPMODIFY on blk_mq_complete_request_remote()
 * without changing anything, as a livepatch or another hook module would, so
 * the VM test can check that irqpilot_cq then refuses to load with -EBUSY.
 */
#include <linux/blk-mq.h>
#include <linux/ftrace.h>
#include <linux/module.h>

static void notrace ipcq_holder_hook(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

static struct ftrace_ops ipcq_holder_ops = {
	.func = ipcq_holder_hook,
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
	.flags = FTRACE_OPS_FL_IPMODIFY,
#else
	.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS,
#endif
};

static int __init ipcq_holder_init(void)
{
	int ret;

	ret = ftrace_set_filter_ip(&ipcq_holder_ops,
				   (unsigned long)blk_mq_complete_request_remote, 0, 0);
	if (ret)
		return ret;
	ret = register_ftrace_function(&ipcq_holder_ops);
	if (ret)
		ftrace_set_filter_ip(&ipcq_holder_ops,
				     (unsigned long)blk_mq_complete_request_remote, 1, 0);
	return ret;
}

static void __exit ipcq_holder_exit(void)
{
	unregister_ftrace_function(&ipcq_holder_ops);
	ftrace_set_filter_ip(&ipcq_holder_ops, (unsigned long)blk_mq_complete_request_remote, 1, 0);
}

module_init(ipcq_holder_init);
module_exit(ipcq_holder_exit);
MODULE_DESCRIPTION("irqpilot_cq test: a second IPMODIFY user of blk_mq_complete_request_remote");
MODULE_LICENSE("GPL");
