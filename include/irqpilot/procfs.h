/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_PROCFS_H
#define IRQPILOT_PROCFS_H

/*
 * Pure parsers for the /proc text formats irqpilot samples. They take a
 * buffer (not a path), do no I/O and never abort: malformed input gives a
 * negative errno (-EINVAL for syntax, -ERANGE for out-of-range numbers)
 * and a one-line reason with the line number in the diag.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/diag.h"

/* ---- /proc/interrupts ---------------------------------------------- */

/*
 * The header names one column per *online* CPU ("CPU0 CPU2 CPU3" when CPU1
 * is offline). col_cpu[i] is the CPU id of count column i.
 */
struct ip_irq_header {
	int ncols;
	int col_cpu[IP_CPU_MAX];
	/* Lines that begin with no label: the rest of a name that holds a
	 * newline (see ip_parse_interrupts_body()), skipped; the first's number. */
	int name_tails;
	int first_tail;
};

/* One numbered line. Strings point into a scratch buffer that is valid
 * only during the callback. */
struct ip_irq_line {
	unsigned irq;
	int lineno;
	const uint64_t *counts; /* ncols entries, indexed by column */
	int ncounts;
	const int *nonzero;  /* the columns whose count is not 0, ascending */
	int nr_nonzero;
	const char *chip;    /* "IO-APIC", "PCI-MSI", "GICv3", "ITS-MSI", "PCI-MSIX-0000:00:02.0"; "" if none */
	const char *hwirq;   /* "2-edge", "81920-edge", "310", "524288"; "" if none */
	const char *trigger; /* "Level"/"Edge" on arm64, "" on x86 (it is part of hwirq there) */
	const char *actions; /* "mmc0, sym53c8xx", may contain spaces; "" if no action */
	bool unnamed_action; /* actions "" and yet one action, named "" (mtk-sd) */
};

/* Return 0 to continue, a negative errno to stop parsing with that error. */
typedef int (*ip_irq_line_cb)(void *ctx, const struct ip_irq_line *line);

/*
 * Parses the whole file: the header into @hdr, then every numbered line
 * through @cb. Lines without a number (NMI:, LOC:, ERR:, IPI0:) are
 * skipped. A line with fewer count columns than the header is an error;
 * counts above 2^64-1 are -ERANGE.
 */
int ip_parse_interrupts(const char *text, size_t len, struct ip_irq_header *hdr,
			ip_irq_line_cb cb, void *ctx, struct ip_diag *d);

/*
 * The same in two steps, for a file read a chunk of whole lines at a time:
 * the header line (*used: its length with the newline), then any run of
 * whole lines after it, numbered from @first_lineno.
 */
int ip_parse_interrupts_header(const char *text, size_t len, struct ip_irq_header *hdr, size_t *used,
			       struct ip_diag *d);
int ip_parse_interrupts_body(const char *text, size_t len, struct ip_irq_header *hdr, int first_lineno,
			     ip_irq_line_cb cb, void *ctx, struct ip_diag *d);

/* Split an actions string "mmc0, sym53c8xx" into at most @max names
 * (copied into @buf, NUL-separated). Returns the number of names. */
int ip_split_actions(const char *actions, char *buf, size_t bufsize, const char **names, int max);

/* ---- /proc/softirqs ------------------------------------------------ */

/*
 * /proc/softirqs has one column per *possible* CPU. Fills @by_cpu (indexed
 * by CPU id, IP_CPU_MAX entries, zeroed first) with the counts of row
 * @row ("BLOCK"); *ncpus gets the column count. -ENOENT if the row is absent.
 * Every line up to @row must be "NAME:"; only @row's counts are parsed
 * (and checked), and the lines after it are not read.
 */
int ip_parse_softirqs(const char *text, size_t len, const char *row, uint64_t *by_cpu, int *ncpus,
		      struct ip_diag *d);

/* ---- /sys/kernel/irq/N/per_cpu_count ------------------------------- */

/*
 * kernel/irq/irqdesc.c per_cpu_count_show() (CONFIG_SPARSE_IRQ) prints
 * "%u" per *possible* CPU (for_each_possible_cpu, ascending ids, offline
 * ones included), comma-separated, then "\n", with scnprintf into the one
 * PAGE_SIZE buffer sysfs gives a show(). Past PAGE_SIZE - 1 bytes the text
 * is cut: the last number may be cut short and the newline is missing.
 * /proc/interrupts instead has one column per *online* CPU, so field i is
 * the i-th CPU of @possible, not column i.
 *
 * Fills @by_cpu (@nr_cpus entries, zeroed first) by CPU id. -EMSGSIZE when
 * the text is cut (no newline at its end: every number of it is suspect),
 * -EINVAL when it is not the kernel's format or its field count is not the
 * number of possible CPUs, -ERANGE for a count above 2^32-1 (the kernel's
 * counts are unsigned int).
 */
int ip_parse_per_cpu_count(const char *text, size_t len, const ip_cpuset *possible, uint32_t *by_cpu,
			   int nr_cpus, struct ip_diag *d);

/* ---- /proc/PID/stat, /proc/PID/status, /proc/PID/io ------------------ */

struct ip_pid_stat {
	pid_t pid;
	char comm[64];
	char state;
	pid_t ppid;
	uint64_t utime, stime;       /* clock ticks */
	long priority, nice;
	uint64_t starttime;
	int processor;               /* field 39: CPU it last ran on */
	unsigned rt_priority;        /* field 40 */
	unsigned policy;             /* field 41: SCHED_* */
	uint64_t delayacct_blkio;    /* field 42, 0 if absent */
	bool has_processor;          /* older or truncated files lack 39-42 */
};

/* comm may hold spaces and ')' (it is taken up to the *last* ')'). */
int ip_parse_pid_stat(const char *text, size_t len, struct ip_pid_stat *out, struct ip_diag *d);

struct ip_pid_status {
	bool has_cpus_allowed;
	ip_cpuset cpus_allowed;      /* Cpus_allowed_list */
	bool has_ctxt;
	uint64_t voluntary_ctxt_switches;
	uint64_t nonvoluntary_ctxt_switches;
	pid_t ppid;
	char state;                  /* State's letter, '\0' without the line */
	/* Name as status writes it: escaped (task_name(), fs/proc/array.c),
	 * so a name with a blank or a backslash differs from stat's comm;
	 * cut to 63 bytes. "" without the line. */
	char name[64];
};

int ip_parse_pid_status(const char *text, size_t len, struct ip_pid_status *out, struct ip_diag *d);

struct ip_pid_io {
	uint64_t read_bytes, write_bytes;
};

int ip_parse_pid_io(const char *text, size_t len, struct ip_pid_io *out, struct ip_diag *d);

/* ---- /proc/diskstats ---------------------------------------------- */

struct ip_diskstat {
	unsigned major, minor;
	const char *name;            /* valid during the callback */
	/* Field numbers count from the start of the line (major is 1). */
	uint64_t rd_ios, wr_ios;     /* fields 4 and 8: completed reads/writes */
	uint64_t discard_ios;        /* field 15 (4.18+), 0 if absent */
	uint64_t flush_ios;          /* field 19 (5.5+), 0 if absent */
	uint64_t in_flight;
	uint64_t io_ticks;
};

typedef int (*ip_diskstat_cb)(void *ctx, const struct ip_diskstat *s);
int ip_parse_diskstats(const char *text, size_t len, ip_diskstat_cb cb, void *ctx, struct ip_diag *d);

/* ---- /proc/stat --------------------------------------------------- */

/* Per-CPU time in clock ticks from the "cpuN" lines. */
struct ip_cpu_times {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/* Fills @by_cpu (IP_CPU_MAX entries, zeroed first; @present marks which
 * were listed). */
int ip_parse_stat(const char *text, size_t len, struct ip_cpu_times *by_cpu, ip_cpuset *present,
		  struct ip_diag *d);

/* ---- replay counters: irqpilot/submit and irqpilot/complete ---------- */

/* One "DEVICE CPU COUNT" line, cumulative. */
typedef int (*ip_counter_cb)(void *ctx, const char *device, int cpu, uint64_t count);
int ip_parse_counters(const char *text, size_t len, ip_counter_cb cb, void *ctx, struct ip_diag *d);

#endif
