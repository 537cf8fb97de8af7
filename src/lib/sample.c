// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sample: read one snapshot of the machine through a root.
 *
 * The expensive, rarely-changing parts (CPU topology, the storage scan,
 * the PIDs of IRQ threads) are cached and read again only when a cheap
 * signature changes: the online CPU list, or the set of IRQ numbers and
 * action names in /proc/interrupts. So is what /proc/irq/N/ says of a
 * tracked vector besides its affinity (struct vec_cache).
 *
 * /proc/interrupts itself is read whole only now and then (struct
 * full_cache): between those full scans the counts of the tracked vectors
 * come from /sys/kernel/irq/N/per_cpu_count, one small file each, and the
 * lines of every other IRQ are carried over from the last full scan.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/counters.h"
#include "irqpilot/macro.h"
#include "irqpilot/procfs.h"
#include "irqpilot/sample.h"
#include "irqpilot/sorted.h"

/*
 * A vector's node and the mode of its smp_affinity do not change while it
 * exists, and its effective affinity changes when its affinity does (or
 * when the kernel moves it for a CPU going offline). Small machines spend
 * most of a cycle on these files, so only smp_affinity_list is read every
 * sample.
 */
#define EFFECTIVE_EVERY 6 /* read effective_affinity_list at least every 6th sample */

struct vec_cache {
	unsigned irq;
	int node;
	mode_t mode;
	uint64_t aff_sig;    /* of the smp_affinity_list text the effective was read with */
	ip_cpuset affinity;  /* as last read: kept when a read finds the file empty */
	bool have_effective;
	ip_cpuset effective;
	int eff_age;	     /* samples since effective_affinity_list was read */
	bool reread;	     /* irqpilotd wrote the vector: read its effective again */
};

/*
 * How often all of /proc/interrupts is read when nothing else asks for it:
 * 60 s, longer where one read costs more than 60 ms of CPU
 * (ip_full_scan_period_ns()). At 1,024 CPUs x 8,000 IRQs one full scan is
 * 86.6 MB of text, about 200 ms; at 60 s that was one cycle in six. What it
 * alone brings are IRQs that appeared without a uevent (a driver asking for
 * vectors again, an [irq NAME] rule's line) and the load of the untracked
 * IRQs, which moves on the scale of minutes (NICs, timers); hot-plug comes
 * by uevent (ip_sampler_invalidate), a disk behind a controller whose
 * vectors stay also by /proc/diskstats (disks_changed()), and a freed
 * tracked vector by its vanished /sys/kernel/irq/N, all at once.
 */
#define FULL_SCAN_NS (UINT64_C(60) * 1000000000u)
/*
 * Samples come on a timer, each timed when it starts: two a period apart
 * differ from it by their wakeups' latencies, either way. Without slack a
 * 60 s period at a 10 s interval was 60 s or 70 s by a microsecond. A
 * 64th of it (0.94 s) holds any wakeup's latency; at intervals shorter
 * than that a scan may come up to it early, which costs nothing.
 */
#define FULL_SCAN_SLACK 64
/*
 * A controller reset frees a disk's vectors and its driver requests new
 * ones, often under other numbers, without a uevent: nvme_reset_work()
 * (drivers/nvme/host/pci.c) through pci_free_irq_vectors() and
 * pci_alloc_irq_vectors_affinity(), ufshcd's host reset through
 * free_irq() and devm_request_irq(). The full scan that saw them freed
 * finds no vector for the disk; without more, the new ones waited for the
 * next full scan, up to a minute in which the disk's completions went
 * where the kernel's default affinity put them (60 s measured on the
 * phone fixture, its UFS vector renumbered 37 -> 38). For this long after
 * such a scan every sample reads /proc/interrupts whole: an NVMe reset
 * takes seconds (its admin queue's timeout), a UFS one milliseconds, and
 * at 1,024 CPUs a full scan each 2 s interval is a tenth of a CPU for it.
 */
#define REGAIN_NS (UINT64_C(30) * 1000000000u)

uint64_t ip_full_scan_period_ns(uint64_t scan_cpu_ns)
{
	/* Where one scan costs more CPU than FULL_SCAN_NS / IP_FULL_SCAN_SHARE
	 * (60 ms: thousands of CPUs and IRQs), the scans are spaced so that
	 * they take that share of one CPU: at 1,024 CPUs x 8,000 IRQs one took
	 * 205 ms on the bench's host, every 60 s a sixth of its idle minute's
	 * CPU, 0.12 of irqbalance's (which reads it all every 10 s). */
	uint64_t p = scan_cpu_ns > IP_FULL_SCAN_MAX_NS / IP_FULL_SCAN_SHARE ? IP_FULL_SCAN_MAX_NS
									     : scan_cpu_ns * IP_FULL_SCAN_SHARE;

	return p > FULL_SCAN_NS ? p : FULL_SCAN_NS;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Untracked lines between full scans. Their per-CPU load still matters:
 * it is most of snap->irq_load, which derive turns into cpu_irq and the
 * policy into least_loaded(). It is taken as the rate measured between the
 * last two full scans, held until the next: the published cumulative
 * counts grow at that rate, never go down (derive would take that for a
 * 32-bit wrap) and equal the kernel's exactly on the first two samples.
 * /proc/stat's per-CPU irq time would be fresh, but it is time, not
 * interrupts, and only with IRQ_TIME_ACCOUNTING; mixing it into a count of
 * interrupts would give the policy a number in no unit.
 */
struct held {
	uint64_t real;	     /* the kernel's count at the last full scan */
	double rate;	     /* per second, between the last two full scans */
	double pub;	     /* what snapshots say, cumulative */
};

/*
 * Passive lines: the tracked vectors irqpilotd can do nothing for, as the
 * full scan's sample saw them: managed by the kernel (their affinity
 * cannot be written) and without an IRQ thread to move instead. Most
 * storage vectors are such (NVMe: one per hw queue), and reading their
 * per_cpu_count and /proc/irq/N/ files was most of a cycle; at 1,024 CPUs
 * one 1,024-field file each. Between full scans they are held as the
 * untracked lines are, but per CPU: their counts grow at the rate measured
 * between the last two full scans, on the CPUs they were counted on, and
 * their /proc/irq/N/ is what the last read said (the kernel changes a
 * managed vector's affinity only when CPUs go offline, which invalidates
 * everything). So their rates, and with them the devices' locality, are
 * at most FULL_SCAN_NS old. When such a vector is freed, its controller's
 * admin vector, never managed and so still read, goes with it
 * (pci_free_irq_vectors()), and its failing kept fd makes a full scan.
 */
/* One CPU's count of a tracked line, as held between full scans. */
struct held_cpu {
	int cpu;
	struct held h;
};

/*
 * The lines' action names: one buffer for all of a full scan's lines,
 * counted, so that the full cache and every snapshot until the next full
 * scan hold the same one (at 8,000 lines, 170 KB each) instead of a copy.
 * It is never written to once the scan is done.
 */
struct names {
	unsigned refs;
	char text[];
};

static struct names *names_of(char *text)
{
	return (struct names *)(text - offsetof(struct names, text));
}

/* Grows a buffer no one else holds yet (@text may be NULL). */
static char *names_resize(char *text, size_t cap)
{
	struct names *n = realloc(text ? names_of(text) : NULL, sizeof(*n) + cap);

	if (!n)
		return NULL;
	n->refs = 1;
	return n->text;
}

static char *names_get(char *text)
{
	names_of(text)->refs++;
	return text;
}

static void names_put(char *text)
{
	struct names *n = text ? names_of(text) : NULL;

	if (n && !--n->refs)
		free(n);
}

struct full_cache {
	bool have;
	int nr;		     /* lines of the last full scan, sorted by IRQ */
	struct ip_irq *irqs; /* percpu NULL; info of tracked lines kept */
	char *names;	     /* struct names, the irqs' actions */
	struct held *line;   /* nr: totals of untracked lines */
	/* Tracked lines: the CPUs each had a count on at the full scan
	 * (line i's are pc[pc_off[i] .. pc_off[i + 1]), by CPU), and whether
	 * the line is passive until the next full scan: then its counts are
	 * these, held, and nothing of it is read. */
	struct held_cpu *pc;
	int *pc_off;	     /* nr + 1 */
	bool *passive;	     /* nr */
	/* nr: a managed line's /proc/irq/N/ stays as read until the next
	 * full scan, passive or not: user space cannot change its affinity,
	 * and a hot-plug, which moves its effective CPUs, reads all again
	 * (ensure_topology()). With threadirqs no managed line is passive:
	 * its thread is placed, so its counts are read, but not its files. */
	bool *fixed_dir;
	int nr_cpus;
	ip_cpuset counted;   /* the full scan's columns (struct ip_snapshot) */
	struct held *cpu;    /* nr_cpus: untracked load per CPU */
	uint64_t full_ns;    /* time of the last full scan */
	uint64_t pub_ns;     /* time of the last snapshot */
	int nr_full;	     /* full scans since the cache was made */
};

/*
 * The files read every sample for each tracked vector are kept open and
 * read again with pread(fd, buf, n, 0): one syscall a file instead of
 * open + read + close. A kernfs attribute (/sys/kernel/irq/N/per_cpu_count)
 * is a seq_file per open (fs/kernfs/file.c, kernfs_fop_open() and
 * kernfs_seq_show() -> sysfs_kf_seq_show()), and so is a /proc/irq/N/ file
 * (single_open() in kernel/irq/proc.c, read through proc_reg_read_iter() in
 * fs/proc/inode.c); seq_read_iter() (fs/seq_file.c) starts again from the
 * first record whenever it is asked for offset 0, so every such pread calls
 * the show function afresh and gives the current counts.
 *
 * When a vector is freed the kernel removes both directories
 * (kernel/irq/irqdesc.c, free_desc(): irq_sysfs_del() and
 * unregister_irq_proc()): a kept kernfs fd then reads -ENODEV
 * (kernfs_seq_start(), once kernfs_remove() deactivated the node)
 * and a kept /proc fd -EIO (proc_reg_read_iter(): use_pde() fails once
 * remove_proc_entry() ran). A new vector given the same number gets new
 * nodes, never the old fd. So a kept fd that fails is a vanished vector:
 * it is closed and dropped, and the sampler does the full scan it does for
 * a vanished vector anyway (at once for per_cpu_count, whose counts would
 * be wrong; the next sample for the /proc/irq/N/ files, which are read by
 * name once more meanwhile). So a full scan (start, uevent, vanished
 * vector, the long timer) keeps them on the live root; it closes them all
 * when the IRQ list changed, and those of vectors no longer tracked.
 * Closing them all each time made the idle minute's full scan open every
 * one again: most of its system calls.
 *
 * An empty read is no sign of a freed vector: no kernel shows one. A read
 * at offset 0 runs the whole show() into the seq_file's buffer before
 * anything is copied out (seq_read_iter()), and per_cpu_count_show()
 * (kernel/irq/irqdesc.c) and show_irq_affinity() (kernel/irq/proc.c) always
 * end in "\n". Only a fixture rewritten in place (truncate, then write)
 * shows it, between the two. So the file is read by name once more: gone
 * there (ENOENT) is a vanished vector; text is used; empty again, this
 * sample does without that file (what is kept of the vector stands, see
 * read_vec_file()) and says so.
 *
 * Real sysfs and procfs files are never replaced by rename; a fixture tree
 * that renames a new file over a kept one, or removes its directory, is
 * read at the old inode until the next full scan; after it, below a tree,
 * each kept name is looked up before its fd's next read and the fd closed
 * if the name leads elsewhere. So fixtures are rewritten in place, as the
 * kernel's files change.
 */
enum vec_file { VF_PCC, VF_AFF, VF_EFF, VF_NR };

struct vec_fds {
	unsigned irq;
	int fd[VF_NR]; /* -1: not open */
	/* below a tree, each fd's file when opened, and the fd_cache.gen it
	 * was last looked up at: fdc_lookup_again() */
	dev_t dev[VF_NR];
	ino_t ino[VF_NR];
	unsigned gen[VF_NR];
};

/*
 * The fds come out of the daemon's RLIMIT_NOFILE, which it shares with the
 * perf counters (one per CPU per event), the control socket's clients and
 * sd-device: this cache takes at most a quarter of the soft limit (256
 * under systemd's default of 1024). Files past it are read with
 * open + read + close, as without the cache.
 */
#define FD_SHARE 4
#define FD_CAP_MAX 65536 /* RLIM_INFINITY: 3 files x 21,845 vectors is no machine's */
/* A sysfs attribute is at most a page (sysfs_kf_seq_show()); a /proc/irq
 * list of a 8,192-CPU machine is well under this. */
#define VEC_FILE_MAX (1u << 20)

struct fd_cache {
	struct vec_fds *v; /* sorted by IRQ */
	int nr, cap;
	int nr_open, max_open;
	char *buf;
	size_t buf_cap;
	unsigned gen; /* full scans below a tree: fdc_lookup_again() */
};

struct ip_sampler {
	struct ip_root *root;
	struct ip_sampler_opts opts;

	bool have_topo;
	struct ip_topology_share *topo_share; /* the snapshots' copy of topo */
	char *online_sig;
	struct ip_topology topo;

	bool have_storage;
	uint64_t irq_sig;
	struct ip_storage storage;
	unsigned *tracked; /* sorted IRQ numbers whose per-CPU counts are kept */
	int nr_tracked;
	bool last_fast;	       /* this sample read no /proc/interrupts */
	bool fc_fresh;	       /* this sample published a full scan */

	/* The tracked lines' IRQ threads, read every sample; the scan of all
	 * of /proc that found them runs again only when one is gone or the
	 * tracked set may have changed. Sorted by pid. */
	bool have_threads;
	struct held_thread *threads;
	int nr_threads;
	bool threads_forced; /* the last scan found forced threading */
	/* Tracked IRQs whose thread exited with no other found in its place
	 * (note_orphans()); until orphans_until_ns each sample scans /proc
	 * for them again */
	unsigned *orphans;
	int nr_orphans;
	uint64_t orphans_until_ns;

	struct vec_cache *vecs; /* sorted by IRQ */
	int nr_vecs;

	/* what the last /proc/interrupts held, to size the next one's arrays */
	int irqs_hint;
	size_t names_hint;

	struct ip_counters *counters;

	struct full_cache fc;
	bool force_full;       /* invalidated: the next sample reads everything */
	int sparse_irq;        /* -1 not asked yet, else whether sys/kernel/irq exists */
	bool tracked_changed;  /* the storage scan ran: untracked load lost its baseline */
	/* /proc/diskstats' disks at the last look (disks_changed()): its
	 * names, sorted, and their hash as the snapshot takes it */
	char **disk_names;
	size_t nr_disk_names;
	uint64_t disks_sig;
	bool storage_stale;    /* a disk came or went: scan the storage again */
	/* A disk's vectors all freed while the disk stayed (a controller
	 * reset): until then, or until every disk has a vector again, each
	 * sample is a full scan, as only one sees the vectors requested anew
	 * (REGAIN_NS) */
	uint64_t regain_until_ns;
	bool scanned_now;      /* this sample ran the storage scan */
	bool noted_cut;        /* a truncated per_cpu_count was told once */
	bool noted_tails;      /* IRQ names holding a newline were told once */
	bool noted_twice;      /* an IRQ listed twice was told once */
	char noted_counts[512]; /* what was said of recorded counts not understood */
	unsigned long nr_empty_reads; /* kept files read empty twice (fixtures only) */
	bool note_pending;
	char note[512];
	unsigned long nr_full_scans, nr_fast_scans;
	/* CPU time of the last full scan's read of /proc/interrupts, which
	 * sets the period to the next (ip_full_scan_period_ns()) */
	uint64_t full_cpu_ns;
	uint32_t *pcc;	       /* pcc_n scratch for per_cpu_count */
	int pcc_n;
	/* read_fast()'s scratch, kept from sample to sample: the tracked
	 * lines' counts as read (fpc_n of fpc_cap); the k-th tracked line is
	 * line fline[k] (nr_fline of them), its first count at foff[k]
	 * (room for foff_n lines in both), so that fast_block() walks only
	 * those */
	struct ip_cpu_count *fpc;
	size_t fpc_n, fpc_cap;
	size_t *foff;
	int *fline;
	int foff_n, nr_fline;
	struct fd_cache fdc;
	/* Each storage vector's line (vec_line_of()), devices in order, -1
	 * where none: made for the lines of full cache fc_gen and the devices
	 * of scan storage_gen, which only a full scan changes. */
	unsigned long fc_gen, storage_gen;
	unsigned long vl_fc, vl_storage; /* what vec_line is of; vl_fc 0: no full cache's */
	int *vec_line;
	int vec_line_cap;
	/* This sample's lines with an info, in order: a fast sample's are
	 * known from fast_block(), the others' found by info_lines(). At 500
	 * IRQs most lines have none, and walking them all cost each of the
	 * four passes over the tracked vectors (same_vecs(), read_irq_dirs(),
	 * classify_managed()'s two) some 5,000 instructions a sample. */
	int *info_line;
	int nr_info, info_cap;
};

/*
 * A known IRQ thread as its last read left it: its stat is held while its
 * status shows it has not run since (stat_holds()).
 */
struct held_thread {
	struct ip_irq_thread t;
	uint64_t irq_total;	  /* its line's total at that read */
	unsigned long full_scans; /* nr_full_scans at that read */
	char state;		  /* status' State then, '\0' unknown */
	bool written;		  /* ip_sampler_forget_thread() since */
};

/* ---- paths ------------------------------------------------------------ */

/*
 * "@pre@n@post" in @buf (@size bytes), as snprintf("%s%lu%s") would write
 * it: the paths of a tracked vector's and an IRQ thread's files, made
 * every cycle, where snprintf() cost a thousand instructions a path, a
 * twentieth of a small machine's step. One that does not fit is "", which
 * names no file.
 */
static const char *num_path(char *buf, size_t size, const char *pre, unsigned long n,
			    const char *post)
{
	size_t lp = strlen(pre), lq = strlen(post), nd = 0;
	char digits[24];

	do
		digits[nd++] = (char)('0' + n % 10);
	while ((n /= 10) && nd < sizeof(digits));
	if (lp + nd + lq >= size) {
		buf[0] = '\0';
		return buf;
	}
	memcpy(buf, pre, lp);
	for (size_t i = 0; i < nd; i++)
		buf[lp + i] = digits[nd - 1 - i];
	memcpy(buf + lp + nd, post, lq + 1);
	return buf;
}

/* ---- kept fds of the tracked vectors' files -------------------------- */

static void fdc_init(struct fd_cache *fc)
{
	struct rlimit rl;
	rlim_t n = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		n = rl.rlim_cur;
	n /= FD_SHARE;
	fc->max_open = n > FD_CAP_MAX ? FD_CAP_MAX : (int)n;
}

static void fdc_close_all(struct fd_cache *fc)
{
	for (int i = 0; i < fc->nr; i++)
		for (int k = 0; k < VF_NR; k++)
			if (fc->v[i].fd[k] >= 0)
				close(fc->v[i].fd[k]);
	fc->nr = 0;
	fc->nr_open = 0;
}

static void fdc_close(struct fd_cache *fc, struct vec_fds *v, int k)
{
	close(v->fd[k]);
	v->fd[k] = -1;
	fc->nr_open--;
}

static const char *vec_path(char *buf, size_t size, unsigned irq, enum vec_file k)
{
	if (k == VF_PCC)
		return num_path(buf, size, "sys/kernel/irq/", irq, "/per_cpu_count");
	return num_path(buf, size, "proc/irq/", irq,
			k == VF_AFF ? "/smp_affinity_list" : "/effective_affinity_list");
}

/* A full scan's look at the kept fds (see above): below a tree, each
 * name is looked up before its fd's next read (fdc_still_named()), so
 * that what the cycle does not read (an effective affinity, at idle) is
 * not looked up for nothing; on the live root none, whose fds fail once
 * their file is gone. */
static void fdc_lookup_again(struct fd_cache *fc, struct ip_root *r)
{
	if (!ip_root_is_live(r))
		fc->gen++;
}

/* Whether @v's kept fd of file @k (@path) may be read: not looked up since
 * the last full scan, its name must still lead to its file, else it is
 * closed. */
static bool fdc_still_named(struct fd_cache *fc, struct ip_root *r, struct vec_fds *v, int k,
			    const char *path)
{
	if (v->gen[k] == fc->gen)
		return true;
	if (!ip_root_names(r, path, v->dev[k], v->ino[k])) {
		fdc_close(fc, v, k);
		return false;
	}
	v->gen[k] = fc->gen;
	return true;
}

/* The entries of vectors @snap (sorted by IRQ, as the cache) does not
 * track: a rule or a pin that named one is gone. */
static void fdc_prune(struct fd_cache *fc, const struct ip_snapshot *snap)
{
	int n = 0, j = 0;

	for (int i = 0; i < fc->nr; i++) {
		struct vec_fds *v = &fc->v[i];

		while (j < snap->nr_irqs && snap->irqs[j].irq < v->irq)
			j++;
		if (j < snap->nr_irqs && snap->irqs[j].irq == v->irq && snap->irqs[j].tracked) {
			fc->v[n++] = *v;
			continue;
		}
		for (int k = 0; k < VF_NR; k++)
			if (v->fd[k] >= 0)
				fdc_close(fc, v, k);
	}
	fc->nr = n;
}

static void fdc_free(struct fd_cache *fc)
{
	fdc_close_all(fc);
	free(fc->v);
	free(fc->buf);
	memset(fc, 0, sizeof(*fc));
}

/* @irq's entry, made if need be; NULL only on ENOMEM (then read uncached). */
static struct vec_fds *fdc_slot(struct fd_cache *fc, unsigned irq)
{
	bool found;
	int lo = (int)IP_SORTED_POS(fc->v, fc->nr, irq, irq, &found);
	struct vec_fds *v;

	if (found)
		return &fc->v[lo];
	if (fc->nr == fc->cap) {
		int ncap = fc->cap ? fc->cap * 2 : 64;
		struct vec_fds *n = realloc(fc->v, sizeof(*n) * ncap);

		if (!n)
			return NULL;
		fc->v = n;
		fc->cap = ncap;
	}
	/* the tracked vectors come in ascending order: nearly always appended */
	v = &fc->v[lo];
	memmove(v + 1, v, sizeof(*v) * (fc->nr - lo));
	fc->nr++;
	v->irq = irq;
	for (int k = 0; k < VF_NR; k++)
		v->fd[k] = -1;
	return v;
}

/* The whole of a single-value file through @fd, from offset 0, into fc->buf. */
static ssize_t pread_whole(struct fd_cache *fc, int fd)
{
	for (;;) {
		ssize_t n;

		if (!fc->buf) {
			if (!(fc->buf = malloc(8192)))
				return -ENOMEM;
			fc->buf_cap = 8192;
		}
		n = pread(fd, fc->buf, fc->buf_cap - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if ((size_t)n < fc->buf_cap - 1) {
			fc->buf[n] = '\0';
			return n;
		}
		/* full: more may follow; a pread at 0 starts the file again */
		{
			char *nb = fc->buf_cap >= VEC_FILE_MAX ? NULL : realloc(fc->buf, fc->buf_cap * 2);

			if (!nb)
				return fc->buf_cap >= VEC_FILE_MAX ? -EFBIG : -ENOMEM;
			fc->buf = nb;
			fc->buf_cap *= 2;
		}
	}
}

static char *dup_buf(const struct fd_cache *fc, size_t n, size_t *len)
{
	char *t = malloc(n + 1);

	if (t) {
		memcpy(t, fc->buf, n + 1);
		if (len)
			*len = n;
	}
	return t;
}

/*
 * File @k of tracked vector @irq, as ip_root_read_attr() gives it, through
 * its kept fd when it has one. A kept fd that fails makes the next sample a
 * full scan, and per_cpu_count's gives -ENOENT. One that reads nothing
 * (see above) is read by name once more: -ENOENT there is the vector gone,
 * as a failed fd; -ENODATA when that is empty too (or a file opened anew
 * reads nothing), and the caller keeps what it knows of the vector for this
 * sample.
 */
static int read_vec_file(struct ip_sampler *s, unsigned irq, enum vec_file k, char **out, size_t *len)
{
	struct fd_cache *fc = &s->fdc;
	struct vec_fds *v = NULL;
	char path[64];
	ssize_t n;
	int fd, ret = 0;

	vec_path(path, sizeof(path), irq, k);
	/* a capture must see every read through its recorder */
	if (!ip_root_recording(s->root))
		v = fdc_slot(fc, irq);
	if (v && v->fd[k] >= 0 && fdc_still_named(fc, s->root, v, k, path)) {
		n = pread_whole(fc, v->fd[k]);
		if (n > 0)
			return (*out = dup_buf(fc, (size_t)n, len)) ? 0 : -ENOMEM;
		if (n == -ENOMEM || n == -EFBIG)
			return (int)n;
		if (n == 0) {
			ret = ip_root_read_attr(s->root, path, out, len);
			if (ret == 0 && !**out) {
				/* the name is the fd's file, caught the same way:
				 * the fd stays, for the rewrite to complete */
				free(*out);
				*out = NULL;
				s->nr_empty_reads++;
				return -ENODATA;
			}
		}
		/* not trusted again: opened anew next time */
		fdc_close(fc, v, k);
		if (n == 0 && ret != -ENOENT)
			return ret; /* the name's text, or its error */
		s->force_full = true;
		/* Counts go wrong silently: this very sample is a full scan.
		 * The affinity files are read after the lines; by name once
		 * more, they say what they said before there were kept fds
		 * (ENOENT for a vector gone), and the next sample rescans. */
		if (k == VF_PCC)
			return -ENOENT;
		return n == 0 ? -ENOENT : ip_root_read_attr(s->root, path, out, len);
	}
	if (!v || fc->nr_open >= fc->max_open)
		return ip_root_read_attr(s->root, path, out, len);
	fd = ip_root_open_read(s->root, path);
	if (fd < 0)
		return fd;
	n = pread_whole(fc, fd);
	/* an empty file is not kept: the kept fds hold files that had text;
	 * empty is a rewrite caught halfway, as above */
	if (n <= 0) {
		close(fd);
		if (n < 0)
			return (int)n;
		s->nr_empty_reads++;
		return -ENODATA;
	}
	if (!ip_root_is_live(s->root)) {
		struct stat st;

		/* unknown, 0/0 names no file: closed after the next full scan */
		if (fstat(fd, &st) < 0)
			st.st_dev = 0, st.st_ino = 0;
		v->dev[k] = st.st_dev;
		v->ino[k] = st.st_ino;
	}
	v->gen[k] = fc->gen;
	v->fd[k] = fd;
	fc->nr_open++;
	return (*out = dup_buf(fc, (size_t)n, len)) ? 0 : -ENOMEM;
}

/* ---- the sampler ------------------------------------------------------ */

int ip_sampler_new(struct ip_root *r, const struct ip_sampler_opts *o, struct ip_sampler **out)
{
	struct ip_sampler *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->root = r;
	s->sparse_irq = -1;
	if (o)
		s->opts = *o;
	fdc_init(&s->fdc);
	ret = ip_counters_new(s->opts.live_counters, &s->counters);
	if (ret < 0) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static void drop_vecs(struct ip_sampler *s)
{
	free(s->vecs);
	s->vecs = NULL;
	s->nr_vecs = 0;
}

static void drop_full(struct full_cache *fc)
{
	for (int i = 0; i < fc->nr; i++)
		free(fc->irqs[i].info);
	free(fc->irqs);
	names_put(fc->names);
	free(fc->line);
	free(fc->cpu);
	free(fc->pc);
	free(fc->pc_off);
	free(fc->passive);
	free(fc->fixed_dir);
	memset(fc, 0, sizeof(*fc));
}

void ip_sampler_invalidate(struct ip_sampler *s)
{
	/* The full cache is kept: the next full scan continues its held
	 * counts, so that they do not go down across a hot-plug. */
	s->force_full = true;
	drop_vecs(s);
	fdc_close_all(&s->fdc);
	if (s->have_topo)
		ip_topology_free(&s->topo);
	if (s->have_storage)
		ip_storage_free(&s->storage);
	free(s->online_sig);
	free(s->tracked);
	free(s->threads);
	s->online_sig = NULL;
	s->tracked = NULL;
	s->threads = NULL;
	s->nr_tracked = s->nr_threads = 0;
	s->have_topo = s->have_storage = s->have_threads = false;
	s->irq_sig = 0;
}

void ip_sampler_retrack(struct ip_sampler *s)
{
	/* Between full scans a line keeps the tracked flag of the last one;
	 * a line that changed sides moves its load between the held
	 * untracked sum and its own counts, so that sum restarts too. */
	s->force_full = true;
	s->tracked_changed = true;
	/* a line tracked now may have a thread the last scan did not keep */
	s->have_threads = false;
}

void ip_sampler_free(struct ip_sampler *s)
{
	if (!s)
		return;
	ip_sampler_invalidate(s);
	ip_topology_share_drop(&s->topo_share);
	drop_full(&s->fc);
	fdc_free(&s->fdc);
	free(s->pcc);
	free(s->fpc);
	free(s->foff);
	free(s->fline);
	free(s->vec_line);
	free(s->info_line);
	ip_counters_free(s->counters);
	ip_strv_free(s->disk_names, s->nr_disk_names);
	free(s->orphans);
	free(s);
}

void ip_sampler_set_root(struct ip_sampler *s, struct ip_root *r)
{
	s->root = r;
	s->sparse_irq = -1;
	ip_sampler_invalidate(s);
}

const char *ip_sampler_take_note(struct ip_sampler *s)
{
	if (!s->note_pending)
		return NULL;
	s->note_pending = false;
	return s->note;
}

void ip_sampler_scan_counts(const struct ip_sampler *s, unsigned long *full, unsigned long *fast)
{
	*full = s->nr_full_scans;
	*fast = s->nr_fast_scans;
}

void ip_sampler_full_scan_cost(const struct ip_sampler *s, uint64_t *cpu_ns, uint64_t *period_ns)
{
	*cpu_ns = s->full_cpu_ns;
	*period_ns = ip_full_scan_period_ns(s->full_cpu_ns);
}

const char *ip_sampler_submit_source(const struct ip_sampler *s)
{
	return ip_counters_describe(s->counters);
}

struct ip_counters *ip_sampler_counters(struct ip_sampler *s)
{
	return s->counters;
}

/* ---- /proc/interrupts ------------------------------------------------ */

struct irq_ctx {
	struct ip_snapshot *snap;
	struct ip_irq_header *hdr;
	const unsigned *tracked;
	int nr_tracked;
	const struct ip_sampler_opts *opts;
	int cap;
	size_t names_len, names_cap;
	uint64_t sig;
};

static bool is_tracked(const struct irq_ctx *c, unsigned irq, const char *actions)
{
	bool found;

	ip_sorted_pos(c->tracked, (size_t)c->nr_tracked, sizeof(*c->tracked), 0, irq, &found);
	if (found)
		return true;
	return c->opts->track && c->opts->track(c->opts->track_ctx, irq, actions);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* The bytes of an info with @l's strings (their lengths, NUL included,
 * in @len), rounded up so that another may follow it. */
static size_t info_size(const struct ip_irq_line *l, size_t len[3])
{
	size_t al = _Alignof(struct ip_irq_info), n;

	len[0] = strlen(l->chip) + 1;
	len[1] = strlen(l->hwirq) + 1;
	len[2] = strlen(l->trigger) + 1;
	n = sizeof(struct ip_irq_info) + len[0] + len[1] + len[2];
	return (n + al - 1) / al * al;
}

/* A fresh info at @dst (nothing of /proc/irq/N/ read yet), its strings
 * after it. */
static struct ip_irq_info *init_info(void *dst, const struct ip_irq_line *l, const size_t len[3])
{
	struct ip_irq_info *info = dst;
	char *strs = (char *)(info + 1);

	memset(info, 0, sizeof(*info));
	info->chip = memcpy(strs, l->chip, len[0]);
	info->hwirq = memcpy(strs + len[0], l->hwirq, len[1]);
	info->trigger = memcpy(strs + len[0] + len[1], l->trigger, len[2]);
	info->node = -1;
	return info;
}

static struct ip_irq_info *new_info(const struct ip_irq_line *l)
{
	size_t len[3], n = info_size(l, len);
	void *p = malloc(n);

	return p ? init_info(p, l, len) : NULL;
}

static int cmp_cpu_count(const void *a, const void *b)
{
	const struct ip_cpu_count *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* The columns of /proc/interrupts are the online CPUs in order
 * (show_interrupts(), kernel/irq/proc.c: for_each_online_cpu), so this
 * holds on any kernel; a fixture's header need not. */
static bool counts_sorted(const struct ip_irq *q)
{
	for (int k = 1; k < q->nr_percpu; k++)
		if (q->percpu[k - 1].cpu >= q->percpu[k].cpu)
			return false;
	return true;
}

uint32_t ip_irq_count_on(const struct ip_irq *q, int cpu)
{
	bool found = false;
	size_t i = cpu >= 0 ? IP_SORTED_POS(q->percpu, q->nr_percpu, cpu, (unsigned)cpu, &found) : 0;

	return found ? q->percpu[i].count : 0;
}

static int irq_line(void *ctx, const struct ip_irq_line *l)
{
	struct irq_ctx *c = ctx;
	struct ip_snapshot *snap = c->snap;
	int nr_cpus = snap->topo.nr_cpus;
	size_t la = strlen(l->actions) + 1;
	struct ip_irq *irq;

	if (snap->nr_irqs == c->cap) {
		int ncap = c->cap ? c->cap * 2 : 256;
		struct ip_irq *n = realloc(snap->irqs, sizeof(*n) * ncap);

		if (!n)
			return -ENOMEM;
		snap->irqs = n;
		c->cap = ncap;
	}
	/* All action names go into one buffer: 8,000 lines cost one
	 * allocation a cycle, not 8,000. They are pointed at once the
	 * buffer stops moving (fix_names). */
	if (c->names_cap - c->names_len < la) {
		size_t ncap = c->names_cap ? c->names_cap * 2 : 4096;
		char *n;

		while (ncap - c->names_len < la)
			ncap *= 2;
		n = names_resize(snap->irq_names, ncap);
		if (!n)
			return -ENOMEM;
		snap->irq_names = n;
		c->names_cap = ncap;
	}
	memcpy(snap->irq_names + c->names_len, l->actions, la);
	c->names_len += la;
	irq = &snap->irqs[snap->nr_irqs];
	memset(irq, 0, sizeof(*irq));
	irq->irq = l->irq;
	irq->unnamed_action = l->unnamed_action;
	irq->tracked = is_tracked(c, l->irq, l->actions);
	if (irq->tracked) {
		/* Only tracked lines are ever shown with their chip, or read
		 * from /proc/irq/N/: the rest keep their name and counts. */
		int n = 0;

		for (int k = 0; k < l->nr_nonzero; k++)
			n += c->hdr->col_cpu[l->nonzero[k]] >= 0 &&
			     c->hdr->col_cpu[l->nonzero[k]] < nr_cpus;
		irq->info = new_info(l);
		irq->percpu = n ? malloc(sizeof(*irq->percpu) * n) : NULL;
		if (!irq->info || (n && !irq->percpu)) {
			free(irq->info);
			free(irq->percpu);
			return -ENOMEM;
		}
	}
	snap->nr_irqs++;
	/* most columns of a big machine are 0: nothing to add or store */
	for (int k = 0; k < l->nr_nonzero; k++) {
		int i = l->nonzero[k], cpu = c->hdr->col_cpu[i];

		irq->total += l->counts[i];
		if (cpu < 0 || cpu >= nr_cpus)
			continue;
		snap->irq_load[cpu] += l->counts[i];
		if (irq->percpu)
			irq->percpu[irq->nr_percpu++] = (struct ip_cpu_count){ (uint32_t)cpu, (uint32_t)l->counts[i] };
	}
	if (!counts_sorted(irq))
		qsort(irq->percpu, irq->nr_percpu, sizeof(*irq->percpu), cmp_cpu_count);
	c->sig = fnv1a(c->sig, &l->irq, sizeof(l->irq));
	c->sig = fnv1a(c->sig, l->actions, la);
	return 0;
}

/* The names were stored in line order, as irqs[] still is. */
static void fix_names(struct ip_snapshot *snap)
{
	char *p = snap->irq_names;

	for (int i = 0; i < snap->nr_irqs; i++) {
		snap->irqs[i].actions = p;
		p += strlen(p) + 1;
	}
}

static void free_irqs(struct ip_snapshot *snap)
{
	/* a fast sample's infos and counts are all in it (fast_block()) */
	for (int i = 0; !snap->fast_block && i < snap->nr_irqs; i++) {
		/* only tracked lines have either: not two free(NULL) calls a line */
		if (!snap->irqs[i].info && !snap->irqs[i].percpu)
			continue;
		free(snap->irqs[i].info);
		free(snap->irqs[i].percpu);
	}
	free(snap->fast_block);
	snap->fast_block = NULL;
	free(snap->irqs);
	names_put(snap->irq_names);
	snap->irqs = NULL;
	snap->irq_names = NULL;
	snap->nr_irqs = 0;
}

static int cmp_irq(const void *a, const void *b)
{
	unsigned x = ((const struct ip_irq *)a)->irq, y = ((const struct ip_irq *)b)->irq;

	return x < y ? -1 : x > y;
}

struct lines_ctx {
	struct irq_ctx *c;
	bool have_header;
	struct ip_diag *d;
};

static void note_once(struct ip_sampler *s, bool *told, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * An IRQ listed more than once, which no kernel does: show_interrupts()
 * (kernel/irq/proc.c) prints one line per descriptor. The copy was made
 * up inside an action's name: gpiolib-cdev requests a line's interrupt
 * under the consumer label user space chose (drivers/gpio/gpiolib-cdev.c,
 * up to 31 bytes, a newline allowed), so whoever may open a gpiochip can
 * print "\n 37: ..." there. Which copy is the kernel's cannot be told, and
 * believing the wrong one moved the vector by made-up counts or took it
 * for another device's, its original dropped. None is kept: the IRQ is
 * out of the sample, as if not shown (its original stays while
 * proc/irq/N does), and said. The per-CPU totals keep the made-up counts:
 * they never change, so they add nothing to a rate. Sorted @snap.
 */
static void drop_listed_twice(struct ip_sampler *s, struct ip_snapshot *snap)
{
	int k = 0, dropped = 0;
	unsigned first = 0;

	for (int i = 0; i < snap->nr_irqs;) {
		int j = i + 1;

		while (j < snap->nr_irqs && snap->irqs[j].irq == snap->irqs[i].irq)
			j++;
		if (j - i == 1) {
			snap->irqs[k++] = snap->irqs[i++];
			continue;
		}
		if (!dropped++)
			first = snap->irqs[i].irq;
		for (; i < j; i++) {
			free(snap->irqs[i].info);
			free(snap->irqs[i].percpu);
		}
	}
	snap->nr_irqs = k;
	if (dropped)
		note_once(s, &s->noted_twice,
			  "proc/interrupts: IRQ %u%s listed more than once, as no kernel lists one: an IRQ "
			  "name holding a newline made up a line (a GPIO consumer label can), and which is "
			  "the kernel's cannot be told; left out of the samples while it is (said once)",
			  first, dropped > 1 ? " and others are" : " is");
}

static int interrupts_lines(void *ctx, const char *text, size_t len, int first_lineno)
{
	struct lines_ctx *lc = ctx;

	if (!lc->have_header) {
		size_t used;
		int ret = ip_parse_interrupts_header(text, len, lc->c->hdr, &used, lc->d);

		if (ret < 0)
			return ret;
		lc->have_header = true;
		text += used;
		len -= used;
		first_lineno++;
	}
	return ip_parse_interrupts_body(text, len, lc->c->hdr, first_lineno, irq_line, lc->c, lc->d);
}

static int read_interrupts(struct ip_sampler *s, struct ip_snapshot *snap, uint64_t *sig,
			   struct ip_diag *d)
{
	_cleanup_free_ struct ip_irq_header *hdr = malloc(sizeof(*hdr));
	struct irq_ctx c = {
		.snap = snap, .hdr = hdr, .tracked = s->tracked, .nr_tracked = s->nr_tracked,
		.opts = &s->opts, .sig = UINT64_C(14695981039346656037),
	};
	struct lines_ctx lc = { &c, false, d };
	int ret;

	if (!hdr)
		return -ENOMEM;
	free_irqs(snap);
	memset(snap->irq_load, 0, sizeof(uint64_t) * snap->topo.nr_cpus);
	/* Sized like the last sample's, so that 8,000 lines are not grown by
	 * doubling, copied at each step and leaving the old arrays behind. */
	if (s->irqs_hint) {
		snap->irqs = malloc(sizeof(*snap->irqs) * s->irqs_hint);
		snap->irq_names = names_resize(NULL, s->names_hint);
		if (!snap->irqs || !snap->irq_names)
			return -ENOMEM;
		c.cap = s->irqs_hint;
		c.names_cap = s->names_hint;
	}
	/* Streamed: on a 1,024-CPU machine the file is ~90 MB, and holding it
	 * would be most of the daemon's memory. */
	ret = ip_root_read_lines(s->root, "proc/interrupts", interrupts_lines, &lc);
	if (ret == 0 && !lc.have_header)
		ret = ip_diag_set(d, -EINVAL, "empty input, no CPU column header");
	if (ret < 0) {
		if (!d || !d->msg[0])
			return ip_diag_set(d, ret, "proc/interrupts: %s", strerror(-ret));
		return ip_diag_prefix(d, ret, "proc/interrupts");
	}
	if (hdr->name_tails)
		note_once(s, &s->noted_tails,
			  "proc/interrupts: %d line(s) from line %d begin with no label: the rest of an "
			  "IRQ name holding a newline, skipped; that name ends at its newline (said once)",
			  hdr->name_tails, hdr->first_tail);
	fix_names(snap);
	cpuset_zero(&snap->counted);
	for (int i = 0; i < hdr->ncols; i++)
		cpuset_set(&snap->counted, hdr->col_cpu[i]);
	s->irqs_hint = snap->nr_irqs + snap->nr_irqs / 32 + 16;
	s->names_hint = c.names_len + c.names_len / 32 + 512;
	/* The kernel lists IRQs in ascending order; a garbled file need not,
	 * and lookups are binary searches. */
	if (snap->nr_irqs)
		ip_sort(snap->irqs, snap->nr_irqs, sizeof(*snap->irqs), cmp_irq);
	drop_listed_twice(s, snap);
	*sig = c.sig;
	return 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* After a storage scan, whether a disk of @had (those the scan before
 * found a vector for) has none now: its vectors were freed with the disk
 * still there. Sets or ends the window of full scans (REGAIN_NS). */
static void watch_regain(struct ip_sampler *s, const struct ip_snapshot *snap, char (*had)[32],
			 int nr_had)
{
	bool lost = false, vectorless = false;

	for (int i = 0; i < s->storage.nr_devs; i++) {
		const struct ip_blockdev *dev = &s->storage.devs[i];

		if (dev->nr_vectors)
			continue;
		vectorless = true;
		for (int k = 0; k < nr_had && !lost; k++)
			lost = strcmp(had[k], dev->name) == 0;
	}
	if (lost)
		s->regain_until_ns = snap->time_ns + REGAIN_NS;
	else if (!vectorless)
		s->regain_until_ns = 0;
}

/* Storage scan and the tracked set, from the IRQ names just parsed. */
static int rescan_storage(struct ip_sampler *s, const struct ip_snapshot *snap, struct ip_diag *d)
{
	_cleanup_free_ struct ip_irq_name *names = NULL;
	_cleanup_free_ char (*had)[32] = NULL;
	unsigned *tracked = NULL;
	int n = 0, nr_had = 0, ret;

	if (s->have_storage) {
		had = calloc(s->storage.nr_devs ? (size_t)s->storage.nr_devs : 1, sizeof(*had));
		if (!had)
			return -ENOMEM;
		for (int i = 0; i < s->storage.nr_devs; i++)
			if (s->storage.devs[i].nr_vectors)
				memcpy(had[nr_had++], s->storage.devs[i].name, sizeof(*had));
		ip_storage_free(&s->storage);
	}
	s->have_storage = false;
	if (snap->nr_irqs) {
		names = calloc(snap->nr_irqs, sizeof(*names));
		if (!names)
			return -ENOMEM;
	}
	for (int i = 0; i < snap->nr_irqs; i++) {
		names[i].irq = snap->irqs[i].irq;
		names[i].actions = snap->irqs[i].actions;
	}
	ret = ip_storage_sample(s->root, names, snap->nr_irqs, &s->storage, d);
	if (ret < 0)
		return ip_diag_prefix(d, ret, "storage scan");
	s->have_storage = true;
	s->storage_gen++;
	s->storage_stale = false;
	s->scanned_now = true;
	watch_regain(s, snap, had, nr_had);
	s->tracked_changed = true;
	for (int i = 0; i < s->storage.nr_devs; i++)
		n += s->storage.devs[i].nr_vectors;
	if (n) {
		tracked = malloc(sizeof(*tracked) * n);
		if (!tracked)
			return -ENOMEM;
	}
	n = 0;
	for (int i = 0; i < s->storage.nr_devs; i++)
		for (int k = 0; k < s->storage.devs[i].nr_vectors; k++)
			tracked[n++] = s->storage.devs[i].vectors[k].irq;
	if (n)
		qsort(tracked, n, sizeof(*tracked), cmp_uint);
	free(s->tracked);
	s->tracked = tracked;
	s->nr_tracked = n;
	return 0;
}

/* ---- between full scans: the held lines and per_cpu_count ---------- */

/* The strings of @f, as the line it was made from names them. */
static struct ip_irq_line info_line(const struct ip_irq_info *f)
{
	return (struct ip_irq_line){ .chip = f->chip, .hwirq = f->hwirq, .trigger = f->trigger };
}

/* The bytes of @f as init_info() laid it out, the struct and its strings
 * in one block: info_size() of its line, with one strlen() of three. */
static size_t info_bytes(const struct ip_irq_info *f)
{
	size_t al = _Alignof(struct ip_irq_info);
	size_t n = (size_t)(f->trigger - (const char *)f) + strlen(f->trigger) + 1;

	return (n + al - 1) / al * al;
}

/* A copy of the fresh info @f (@n bytes, info_bytes()) at @dst: each fast
 * sample's infos start as the full scan's, which read nothing of
 * /proc/irq/N/ into them. */
static struct ip_irq_info *copy_info(void *dst, const struct ip_irq_info *f, size_t n)
{
	struct ip_irq_info *info = memcpy(dst, f, n);

	info->chip = (char *)dst + (f->chip - (const char *)f);
	info->hwirq = (char *)dst + (f->hwirq - (const char *)f);
	info->trigger = (char *)dst + (f->trigger - (const char *)f);
	return info;
}

static struct ip_irq_info *dup_info(const struct ip_irq_info *src)
{
	struct ip_irq_line l = info_line(src);

	return new_info(&l);
}

/* What a snapshot at @now says of @h, held since the full scan at @base. */
static double held_at(const struct held *h, uint64_t base, uint64_t now)
{
	return now > base ? h->pub + h->rate * (double)(now - base) / 1e9 : h->pub;
}

/*
 * A full scan's count @real of a held counter last seen as @last (NULL:
 * new). With a baseline, the rate is measured from it; a count that went
 * down (a wrap, an IRQ freed, a CPU gone offline) keeps the old rate. When
 * samples since the last full scan held it (@held), the published count
 * catches up to the kernel's but never goes down; otherwise it is the
 * kernel's, as if there were no fast path.
 */
static uint64_t held_update(struct held *h, const struct held *last, uint64_t real, double dt, bool baseline,
			    bool held, const struct full_cache *old, uint64_t now)
{
	double shown;

	h->rate = last ? last->rate : 0;
	h->real = real;
	h->pub = (double)real;
	if (!last)
		return real;
	if (baseline && dt > 0 && real >= last->real)
		h->rate = (double)(real - last->real) / dt;
	/* the last sample said held_at(last, ...); from there at the new rate */
	shown = held_at(last, old->full_ns, old->pub_ns);
	if (now > old->pub_ns)
		shown += h->rate * (double)(now - old->pub_ns) / 1e9;
	if (held && shown > h->pub)
		h->pub = shown;
	return (uint64_t)h->pub;
}

/*
 * The tracked lines' per-CPU counts into @n, continued from @old's as the
 * untracked totals are: the rate is measured between the two full scans,
 * and a line held since the last one (passive) shows counts that catch up
 * to the kernel's but never go down. Only CPUs with a count are kept: a
 * vector fires on the few CPUs of its affinity.
 */
static int publish_tracked(struct ip_snapshot *snap, struct full_cache *n, const struct full_cache *old, double dt)
{
	int np = 0, j = 0;

	for (int i = 0; i < snap->nr_irqs; i++)
		np += snap->irqs[i].nr_percpu;
	n->pc = malloc(sizeof(*n->pc) * (np ? np : 1));
	n->pc_off = malloc(sizeof(*n->pc_off) * (n->nr + 1));
	n->passive = calloc(n->nr ? n->nr : 1, sizeof(*n->passive));
	n->fixed_dir = calloc(n->nr ? n->nr : 1, sizeof(*n->fixed_dir));
	if (!n->pc || !n->pc_off || !n->passive || !n->fixed_dir)
		return -ENOMEM;
	np = 0;
	for (int i = 0; i < snap->nr_irqs; i++) {
		struct ip_irq *q = &snap->irqs[i];
		const struct held_cpu *lp = NULL, *le = NULL;
		bool held = false;

		n->pc_off[i] = np;
		if (!q->tracked)
			continue;
		while (j < old->nr && old->irqs[j].irq < q->irq)
			j++;
		if (j < old->nr && old->pc && old->irqs[j].irq == q->irq && old->irqs[j].tracked &&
		    strcmp(old->irqs[j].actions, q->actions) == 0) {
			lp = old->pc + old->pc_off[j];
			le = old->pc + old->pc_off[j + 1];
			held = old->passive[j] && old->pub_ns != old->full_ns;
		}
		for (int k = 0; k < q->nr_percpu; k++) {
			struct ip_cpu_count *pc = &q->percpu[k];
			int c = (int)pc->cpu;
			struct held_cpu *e;
			uint64_t v;

			while (lp < le && lp->cpu < c)
				lp++;
			e = &n->pc[np++];
			e->cpu = c;
			v = held_update(&e->h, lp < le && lp->cpu == c ? &lp->h : NULL, pc->count, dt, true,
					held, old, snap->time_ns);
			if (v > pc->count) {
				q->total += v - pc->count;
				snap->irq_load[c] += v - pc->count;
				pc->count = (uint32_t)v;
			}
		}
	}
	n->pc_off[snap->nr_irqs] = np;
	return 0;
}

/*
 * After a full scan: measure the untracked rates, publish the untracked
 * counts (held_update) and keep the lines for the samples until the next
 * full scan.
 */
static int publish_full(struct ip_sampler *s, struct ip_snapshot *snap)
{
	struct full_cache *old = &s->fc, n = { .have = true };
	_cleanup_free_ uint64_t *own = NULL; /* by CPU: the tracked lines' counts */
	int nr_cpus = snap->topo.nr_cpus, j = 0;
	bool baseline = old->have && !s->tracked_changed;
	bool held = old->have && old->pub_ns != old->full_ns;
	double dt = old->have && snap->time_ns > old->full_ns ? (double)(snap->time_ns - old->full_ns) / 1e9 : 0;

	n.nr = snap->nr_irqs;
	n.nr_cpus = nr_cpus;
	n.counted = snap->counted;
	n.irqs = calloc(n.nr ? n.nr : 1, sizeof(*n.irqs));
	n.line = calloc(n.nr ? n.nr : 1, sizeof(*n.line));
	n.cpu = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(*n.cpu));
	own = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(*own));
	if (!n.irqs || !n.line || !n.cpu || !own)
		goto fail;
	/* the lines point into it: read_interrupts() made it */
	n.names = snap->irq_names ? names_get(snap->irq_names) : NULL;
	for (int i = 0; i < snap->nr_irqs; i++) {
		struct ip_irq *q = &snap->irqs[i], *c = &n.irqs[i];
		const struct held *last = NULL;

		*c = *q;
		c->percpu = NULL;
		c->nr_percpu = 0;
		c->info = NULL;
		if (q->info && !(c->info = dup_info(q->info)))
			goto fail;
		if (q->tracked)
			continue;
		/* both sorted by IRQ; a number now named otherwise is new */
		while (j < old->nr && old->irqs[j].irq < q->irq)
			j++;
		if (j < old->nr && old->irqs[j].irq == q->irq && !old->irqs[j].tracked &&
		    strcmp(old->irqs[j].actions, q->actions) == 0)
			last = &old->line[j];
		q->total = held_update(&n.line[i], last, q->total, dt, baseline, held, old, snap->time_ns);
	}
	for (int i = 0; i < snap->nr_irqs; i++)
		for (int k = 0; k < snap->irqs[i].nr_percpu; k++)
			own[snap->irqs[i].percpu[k].cpu] += snap->irqs[i].percpu[k].count;
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		const struct held *last = old->have && old->nr_cpus == nr_cpus ? &old->cpu[cpu] : NULL;

		snap->irq_load[cpu] = own[cpu] + held_update(&n.cpu[cpu], last, snap->irq_load[cpu] - own[cpu],
							     dt, baseline, held, old, snap->time_ns);
	}
	/* after the untracked load, which is taken from the kernel's counts */
	if (publish_tracked(snap, &n, old, dt) < 0)
		goto fail;
	n.full_ns = n.pub_ns = snap->time_ns;
	n.nr_full = old->have ? old->nr_full + 1 : 1;
	drop_full(old);
	s->fc = n;
	s->fc_gen++;
	s->tracked_changed = false;
	s->fc_fresh = true;
	return 0;
fail:
	/* its infos are not the snapshot's: free only what was duplicated */
	drop_full(&n);
	return -ENOMEM;
}

/* Says once, and only once, why a sample fell back to /proc/interrupts. */
static void note_once(struct ip_sampler *s, bool *told, const char *fmt, ...)
{
	va_list ap;

	size_t used = s->note_pending ? strlen(s->note) : 0;

	if (*told)
		return;
	*told = true;
	/* two of them in one sample: both said */
	if (used && used + 2 < sizeof(s->note))
		used += (size_t)snprintf(s->note + used, sizeof(s->note) - used, "; ");
	else
		used = 0;
	va_start(ap, fmt);
	vsnprintf(s->note + used, sizeof(s->note) - used, fmt, ap);
	va_end(ap);
	s->note_pending = true;
}

/*
 * Says that a tracked vector's @file read empty (read_vec_file(): through
 * its kept fd and then by name, or opened anew), and what this sample did
 * instead (@then). Every time: no kernel does it, so it is rare and worth
 * seeing in a fixture run.
 */
static void note_empty(struct ip_sampler *s, unsigned irq, const char *file, const char *then)
{
	snprintf(s->note, sizeof(s->note),
		 "IRQ %u: %s read empty (a file caught halfway through a rewrite in place? no kernel "
		 "shows an empty one): %s; the vector keeps its state (%lu such reads so far)",
		 irq, file, then, s->nr_empty_reads);
	s->note_pending = true;
}

/*
 * Room for @n more counts in read_fast()'s scratch; NULL on ENOMEM. The
 * counts of a sample go there, and only fast_block() allocates: where each
 * tracked line had an array (and an info) malloc'ed and freed each cycle,
 * a fifth of a small machine's sample.
 */
static struct ip_cpu_count *fpc_room(struct ip_sampler *s, size_t n)
{
	if (s->fpc_n + n > s->fpc_cap) {
		size_t cap = MAX(s->fpc_n + n, s->fpc_cap * 2);
		struct ip_cpu_count *v = realloc(s->fpc, sizeof(*v) * (cap ? cap : 1));

		if (!v)
			return NULL;
		s->fpc = v;
		s->fpc_cap = cap;
	}
	return s->fpc + s->fpc_n;
}

/*
 * One tracked line from /sys/kernel/irq/N/per_cpu_count. Its fields are by
 * possible CPU; the model, like /proc/interrupts, counts online CPUs only:
 * an offline CPU's count is what it handled before it went away, and
 * leaving it in would make the two sources disagree.
 */
static int read_per_cpu_count(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_irq *q,
			      struct ip_diag *d)
{
	_cleanup_free_ char *text = NULL;
	struct ip_cpu_count *e;
	size_t len;
	int nr_cpus = snap->topo.nr_cpus, ret;

	ret = read_vec_file(s, q->irq, VF_PCC, &text, &len);
	if (ret < 0)
		return ret;
	ret = ip_parse_per_cpu_count(text, len, &snap->topo.possible, s->pcc, nr_cpus, d);
	if (ret < 0)
		return ip_diag_prefix(d, ret, "sys/kernel/irq/%u/per_cpu_count", q->irq);
	q->nr_percpu = 0;
	q->total = 0;
	/* room for every CPU, so that the counts are walked once */
	if (!(e = fpc_room(s, nr_cpus)))
		return -ENOMEM;
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		uint32_t v = s->pcc[cpu];

		if (!v || !cpuset_test(&snap->topo.online, cpu))
			continue;
		e[q->nr_percpu++] = (struct ip_cpu_count){ (uint32_t)cpu, v };
		q->total += v;
		snap->irq_load[cpu] += v;
	}
	s->fpc_n += q->nr_percpu;
	return 0;
}

/* A passive line's counts (see struct held_cpu), as held at this sample. */
static int held_counts(struct ip_sampler *s, int i, struct ip_snapshot *snap, struct ip_irq *q)
{
	const struct full_cache *fc = &s->fc;
	int n = fc->pc_off[i + 1] - fc->pc_off[i];
	struct ip_cpu_count *out = fpc_room(s, n);

	q->total = 0;
	if (!out)
		return -ENOMEM;
	/* publish_tracked() kept them by CPU, ascending */
	for (int k = fc->pc_off[i]; k < fc->pc_off[i + 1]; k++) {
		const struct held_cpu *e = &fc->pc[k];
		uint64_t v = (uint64_t)held_at(&e->h, fc->full_ns, snap->time_ns);

		out[q->nr_percpu++] = (struct ip_cpu_count){ (uint32_t)e->cpu, (uint32_t)v };
		q->total += v;
		snap->irq_load[e->cpu] += v;
	}
	s->fpc_n += n;
	return 0;
}

/*
 * The end of a fast sample: one allocation for the tracked lines' infos
 * (copies of the full scan's, @ibytes in all) and their counts (gathered
 * in s->fpc), in snap->fast_block, which free_irqs() frees whole.
 */
static int fast_block(struct ip_sampler *s, struct ip_snapshot *snap, size_t ibytes)
{
	const struct full_cache *fc = &s->fc;
	char *b = malloc(ibytes + sizeof(*s->fpc) * s->fpc_n + 1), *p = b;
	struct ip_cpu_count *pc;

	if (!b)
		return -ENOMEM;
	pc = (struct ip_cpu_count *)(b + ibytes);
	if (s->fpc_n)
		memcpy(pc, s->fpc, sizeof(*s->fpc) * s->fpc_n);
	for (int k = 0; k < s->nr_fline; k++) {
		int i = s->fline[k];
		struct ip_irq *q = &snap->irqs[i];

		if (q->nr_percpu)
			q->percpu = pc + s->foff[k];
		if (fc->irqs[i].info) {
			size_t n = info_bytes(fc->irqs[i].info);

			q->info = copy_info(p, fc->irqs[i].info, n);
			p += n;
			s->info_line[s->nr_info++] = i;
		}
	}
	snap->fast_block = b;
	return 0;
}

/* Room for @n lines in s->info_line. */
static int info_room(struct ip_sampler *s, int n)
{
	if (n > s->info_cap) {
		int *v = realloc(s->info_line, sizeof(*v) * n);

		if (!v)
			return -ENOMEM;
		s->info_line = v;
		s->info_cap = n;
	}
	return 0;
}

/* read_fast()'s scratch for @nr_cpus CPUs and the full scan's lines;
 * its counts and lines with an info start empty. */
static int fast_scratch(struct ip_sampler *s, int nr_cpus)
{
	if (s->pcc_n != nr_cpus) {
		free(s->pcc);
		s->pcc_n = 0;
		if (!(s->pcc = malloc(sizeof(*s->pcc) * (nr_cpus > 0 ? nr_cpus : 1))))
			return -ENOMEM;
		s->pcc_n = nr_cpus;
	}
	if (s->foff_n < s->fc.nr) {
		size_t *v = realloc(s->foff, sizeof(*v) * s->fc.nr);
		int *l;

		if (!v)
			return -ENOMEM;
		s->foff = v;
		if (!(l = realloc(s->fline, sizeof(*l) * s->fc.nr)))
			return -ENOMEM;
		s->fline = l;
		s->foff_n = s->fc.nr;
	}
	if (info_room(s, s->fc.nr) < 0)
		return -ENOMEM;
	s->fpc_n = 0;
	s->nr_fline = 0;
	s->nr_info = 0;
	return 0;
}

/*
 * A sample without /proc/interrupts: the lines of the last full scan, the
 * tracked ones read again from sysfs, but for the passive ones. -EAGAIN: this sample needs a full
 * scan after all (a tracked vector vanished, or its file cannot be
 * trusted), and snap holds no lines.
 */
static int read_fast(struct ip_sampler *s, struct ip_snapshot *snap)
{
	struct full_cache *fc = &s->fc;
	int nr_cpus = snap->topo.nr_cpus, ret = -ENOMEM;
	struct ip_diag pd = { "" };
	size_t ibytes = 0;

	free_irqs(snap);
	if (fast_scratch(s, nr_cpus) < 0)
		return -ENOMEM;
	snap->irqs = malloc(sizeof(*snap->irqs) * (fc->nr ? fc->nr : 1));
	if (!snap->irqs)
		goto fail;
	snap->irq_names = fc->names ? names_get(fc->names) : NULL;
	snap->counted = fc->counted;
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		snap->irq_load[cpu] = (uint64_t)held_at(&fc->cpu[cpu], fc->full_ns, snap->time_ns);
	for (int i = 0; i < fc->nr; i++) {
		struct ip_irq *q = &snap->irqs[i];

		*q = fc->irqs[i];
		q->info = NULL;
		q->percpu = NULL;
		q->nr_percpu = 0;
		snap->nr_irqs = i + 1;
		if (!q->tracked) {
			q->total = (uint64_t)held_at(&fc->line[i], fc->full_ns, snap->time_ns);
			continue;
		}
		if (fc->irqs[i].info)
			ibytes += info_bytes(fc->irqs[i].info);
		s->fline[s->nr_fline] = i;
		s->foff[s->nr_fline++] = s->fpc_n;
		if (fc->passive[i]) {
			if (held_counts(s, i, snap, q) < 0)
				goto fail;
			continue;
		}
		ret = read_per_cpu_count(s, snap, q, &pd);
		if (ret == -ENODATA) {
			/* The vector is there and the same: only this read
			 * failed. Its counts come from /proc/interrupts this
			 * once, where the kernel shows the same kstat_irqs; what
			 * is known of it (lines, /proc/irq/N/, the kept fds of
			 * the others) stays, and so do the rates and the window
			 * derived from it. Holding the counts instead would
			 * show a cycle without interrupts, then twice as many. */
			note_empty(s, q->irq, "per_cpu_count", "its counts come from /proc/interrupts this sample");
			ret = -EAGAIN;
			goto fail;
		}
		if (ret == -ENOENT) {
			/* freed (kernel/irq/irqdesc.c irq_sysfs_del): the line may
			 * be gone or belong to another vector by now */
			s->force_full = true;
			ret = -EAGAIN;
			goto fail;
		}
		if (ret < 0 && ret != -ENOMEM) {
			note_once(s, &s->noted_cut,
				  "IRQ %u: %s; reading /proc/interrupts instead this time (said once)", q->irq,
				  pd.msg[0] ? pd.msg : strerror(-ret));
			ret = -EAGAIN;
			goto fail;
		}
		if (ret < 0)
			goto fail;
	}
	ret = fast_block(s, snap, ibytes);
	if (ret < 0)
		goto fail;
	fc->pub_ns = snap->time_ns;
	return 0;
fail:
	free_irqs(snap);
	return ret;
}

/* Whether this sample must read all of /proc/interrupts. */
static bool need_full(struct ip_sampler *s, const struct ip_snapshot *snap)
{
	const struct full_cache *fc = &s->fc;
	uint64_t period = ip_full_scan_period_ns(s->full_cpu_ns);

	/* A capture must hold /proc/interrupts on every step; replays and
	 * kernels without CONFIG_SPARSE_IRQ (kernel/irq/irqdesc.c creates
	 * /sys/kernel/irq only then) have nothing else. */
	if (s->opts.full_scan_always || ip_root_recording(s->root) || s->force_full || !fc->have ||
	    !s->have_storage || s->storage_stale || fc->nr_cpus != snap->topo.nr_cpus ||
	    snap->time_ns < s->regain_until_ns)
		return true;
	/* The second sample too: two full scans give the untracked rates. */
	if (fc->nr_full < 2 || snap->time_ns < fc->full_ns ||
	    snap->time_ns - fc->full_ns >= period - period / FULL_SCAN_SLACK)
		return true;
	/* CONFIG_SPARSE_IRQ is how the kernel was built: asked once per root,
	 * not with a stat every cycle */
	if (s->sparse_irq < 0)
		s->sparse_irq = ip_root_exists(s->root, "sys/kernel/irq");
	return !s->sparse_irq;
}

/* ---- /proc/irq/N/ ---------------------------------------------------- */

static void read_effective(struct ip_sampler *s, unsigned nr, struct ip_irq_info *irq,
			   const struct vec_cache *old)
{
	char *text = NULL;
	int ret = read_vec_file(s, nr, VF_EFF, &text, NULL);

	if (ret == -ENODATA) {
		if (old && old->have_effective) {
			irq->have_effective = true;
			irq->effective = old->effective;
		}
		note_empty(s, nr, "effective_affinity_list",
			   old && old->have_effective ? "its last effective affinity stands" : "its affinity stands for it");
		return;
	}
	/* Absent (ENOENT) without GENERIC_IRQ_EFFECTIVE_AFF_MASK:
	 * register_irq_proc() (kernel/irq/proc.c) creates the file only
	 * with it. Then the affinity is all we know. */
	if (ret == 0) {
		if (cpuset_parse_list(&irq->effective, text) == 0 && !cpuset_empty(&irq->effective))
			irq->have_effective = true;
		free(text);
	}
}

/*
 * Reads /proc/irq/@nr/ into @irq, taking from @old (NULL: nothing known)
 * what cannot have changed, and fills @out for the next sample. Returns
 * false when the vector's directory could not be read: then nothing is
 * kept for it.
 */
static bool read_irq_dir(struct ip_sampler *s, unsigned nr, struct ip_irq_info *irq,
			 const struct vec_cache *old, struct vec_cache *out)
{
	struct ip_root *r = s->root;
	char path[64];
	char *text = NULL;
	uint64_t sig = 0;
	long long v;
	struct stat st;
	int ret;

	ret = read_vec_file(s, nr, VF_AFF, &text, NULL);
	if (ret == 0) {
		if (cpuset_parse_list(&irq->affinity, text) == 0)
			irq->have_proc = true;
		sig = fnv1a(UINT64_C(14695981039346656037), text, strlen(text));
		free(text);
	} else if (ret == -ENODATA && old && !old->reread) {
		/* only this read failed: the affinity it last had stands */
		irq->affinity = old->affinity;
		irq->have_proc = true;
		sig = old->aff_sig;
		note_empty(s, nr, "smp_affinity_list", "its last affinity stands");
	} else if (ret == -ENODATA) {
		note_empty(s, nr, "smp_affinity_list", "nothing is known of its /proc/irq/N/ this sample");
	}
	if (!irq->have_proc)
		old = NULL; /* gone, or garbled: read the rest as it is */
	if (old) {
		irq->node = old->node;
		irq->mode = old->mode;
	} else {
		snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity", nr);
		if (ip_root_stat(r, path, &st) == 0)
			irq->mode = st.st_mode & 07777;
		snprintf(path, sizeof(path), "proc/irq/%u/node", nr);
		if (ip_root_read_long(r, path, &v) == 0)
			irq->node = (int)v;
	}
	/* An effective affinity outside the affinity is a move still
	 * pending (x86 moves some vectors at their next interrupt) or one
	 * the chip refused: watch it until it settles. */
	if (old && !old->reread && old->aff_sig == sig && old->eff_age + 1 < EFFECTIVE_EVERY &&
	    !(old->have_effective && !cpuset_subset(&old->effective, &irq->affinity))) {
		irq->have_effective = old->have_effective;
		irq->effective = old->effective;
		out->eff_age = old->eff_age + 1;
	} else {
		read_effective(s, nr, irq, old);
		out->eff_age = 0;
	}
	out->irq = nr;
	out->node = irq->node;
	out->mode = irq->mode;
	out->aff_sig = sig;
	out->affinity = irq->affinity;
	out->have_effective = irq->have_effective;
	out->effective = irq->effective;
	out->reread = false;
	return irq->have_proc;
}

/* A managed vector's /proc/irq/N/, as last read (struct full_cache's fixed_dir). */
static void keep_irq_dir(struct ip_irq_info *irq, const struct vec_cache *old, struct vec_cache *out)
{
	irq->have_proc = true;
	irq->affinity = old->affinity;
	irq->node = old->node;
	irq->mode = old->mode;
	irq->have_effective = old->have_effective;
	irq->effective = old->effective;
	if (out != old)
		*out = *old;
}

/* Whether the lines of @snap with an info are s->vecs's, in order: a fast
 * sample's nearly always (its lines are the full scan's). */
static bool same_vecs(const struct ip_sampler *s, const struct ip_snapshot *snap)
{
	if (s->nr_info != s->nr_vecs)
		return false;
	for (int j = 0; j < s->nr_info; j++)
		if (s->vecs[j].irq != snap->irqs[s->info_line[j]].irq)
			return false;
	return true;
}

/*
 * /proc/irq/N/ of every tracked vector. A capture must hold every file on
 * every step, so a recording root gets no help from the cache.
 */
static int read_irq_dirs(struct ip_sampler *s, struct ip_snapshot *snap)
{
	bool use_cache = !ip_root_recording(s->root);
	/* Updated where they lie, each entry written at or before the one it
	 * came from: a new array and a copy of every entry (two CPU sets
	 * each) was 38 KB a sample at 131 vectors, for entries a managed
	 * vector's fast sample does not change. */
	bool in_place = use_cache && s->last_fast && same_vecs(s, snap);
	struct vec_cache *vecs = in_place ? s->vecs : NULL;
	int n = in_place ? 0 : s->nr_info, j = 0;

	if (n) {
		vecs = malloc(sizeof(*vecs) * n);
		if (!vecs)
			return -ENOMEM;
	}
	n = 0;
	/* both sorted by IRQ */
	for (int k = 0; k < s->nr_info; k++) {
		int i = s->info_line[k];
		struct ip_irq *q = &snap->irqs[i];
		const struct vec_cache *old = NULL;

		while (j < s->nr_vecs && s->vecs[j].irq < q->irq)
			j++;
		if (use_cache && j < s->nr_vecs && s->vecs[j].irq == q->irq)
			old = &s->vecs[j];
		/* fast samples' lines are the full cache's, in its order */
		if (old && !old->reread && s->last_fast && s->fc.fixed_dir[i])
			keep_irq_dir(q->info, old, &vecs[n++]);
		else if (read_irq_dir(s, q->irq, q->info, old, &vecs[n]))
			n++;
	}
	if (!in_place)
		free(s->vecs);
	s->vecs = vecs;
	s->nr_vecs = n;
	return 0;
}

void ip_sampler_forget_thread(struct ip_sampler *s, pid_t pid)
{
	bool found;
	size_t i;

	if (pid <= 0)
		return;
	i = IP_SORTED_POS(s->threads, s->nr_threads, t.pid, (unsigned)pid, &found);
	if (found)
		s->threads[i].written = true;
}

void ip_sampler_forget_irq(struct ip_sampler *s, unsigned irq)
{
	bool found;
	size_t i = IP_SORTED_POS(s->vecs, s->nr_vecs, irq, irq, &found);

	if (found)
		s->vecs[i].reread = true;
}

/*
 * Managed vectors cannot be moved from user space. 6.18 says so with mode
 * 0444; 6.1 says it only on write (EIO). Before any write we can still
 * recognise the kernel's spread: one vector per hw queue, each pinned to
 * exactly its queue's CPUs.
 */
static void classify_managed(struct ip_snapshot *snap, const int *line, const int *info_line,
			     int nr_info)
{
	bool modes_mean_something = false;

	for (int k = 0; k < nr_info; k++) {
		const struct ip_irq_info *info = snap->irqs[info_line[k]].info;

		if (info->have_proc && (info->mode & 0200))
			modes_mean_something = true;
	}
	for (int k = 0; k < nr_info; k++) {
		struct ip_irq_info *info = snap->irqs[info_line[k]].info;

		if (info->have_proc && modes_mean_something && !(info->mode & 0222))
			info->managed = IP_MANAGED_MODE;
	}
	for (int k = 0; k < snap->storage.nr_devs; line += snap->storage.devs[k++].nr_vectors) {
		const struct ip_blockdev *b = &snap->storage.devs[k];
		int io = 0, spread = 0;

		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_vector *vec = &b->vectors[v];
			struct ip_irq *irq;

			if (vec->admin)
				continue;
			io++;
			irq = line[v] < 0 ? NULL : &snap->irqs[line[v]];
			if (!irq || !irq->info || !irq->info->have_proc || vec->queue < 0 ||
			    vec->queue >= b->nr_queues)
				continue;
			if (cpuset_equal(&irq->info->affinity, &b->queues[vec->queue].cpus))
				spread++;
		}
		if (io < 2 || spread != io || b->nr_queues < 2)
			continue;
		for (int v = 0; v < b->nr_vectors; v++) {
			struct ip_irq *irq = line[v] < 0 ? NULL : &snap->irqs[line[v]];

			if (irq && irq->info && !b->vectors[v].admin && irq->info->managed == IP_MANAGED_NO)
				irq->info->managed = IP_MANAGED_SPREAD;
		}
	}
}

/* Every storage vector is tracked, so its line has an info to hold them. */
static void link_devices(struct ip_snapshot *snap, const int *line)
{
	for (int k = 0; k < snap->storage.nr_devs; line += snap->storage.devs[k++].nr_vectors) {
		const struct ip_blockdev *b = &snap->storage.devs[k];

		for (int v = 0; v < b->nr_vectors; v++) {
			struct ip_irq_info *info = line[v] < 0 ? NULL : snap->irqs[line[v]].info;

			if (!info)
				continue;
			if (info->nr_devs && info->devs[info->nr_devs - 1] == k) {
				info->vecs[info->nr_devs - 1] = v;
				continue;
			}
			if (info->nr_devs >= (int)ARRAY_SIZE(info->devs))
				continue;
			info->vecs[info->nr_devs] = v;
			info->devs[info->nr_devs++] = k;
		}
	}
}

/*
 * The line of each of @snap's storage vectors, devices in order (-1: none),
 * for link_devices() and classify_managed(). The lines of every sample
 * until the next full scan are its full cache's, and the devices its
 * storage scan's: looked up once for them, not three times a vector each
 * sample (390 searches at 2 NVMe drives, 12,000 of a 64-CPU step's 490,000
 * instructions).
 */
static const int *vec_line_of(struct ip_sampler *s, const struct ip_snapshot *snap)
{
	/* a fast sample's lines are the full cache's, and so are those of the
	 * full scan that made it */
	unsigned long fc = s->last_fast || s->fc_fresh ? s->fc_gen : 0;
	int n = 0;

	if (fc && s->vl_fc == fc && s->vl_storage == s->storage_gen)
		return s->vec_line;
	for (int k = 0; k < snap->storage.nr_devs; k++)
		n += snap->storage.devs[k].nr_vectors;
	if (n + 1 > s->vec_line_cap) {
		int *v = realloc(s->vec_line, sizeof(*v) * (n + 1));

		if (!v)
			return NULL;
		s->vec_line = v;
		s->vec_line_cap = n + 1;
	}
	n = 0;
	for (int k = 0; k < snap->storage.nr_devs; k++) {
		const struct ip_blockdev *b = &snap->storage.devs[k];
		size_t at = 0;

		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_irq *irq = ip_snapshot_irq_next(snap, b->vectors[v].irq, &at);

			s->vec_line[n++] = irq ? (int)(irq - snap->irqs) : -1;
		}
	}
	s->vl_fc = fc;
	s->vl_storage = s->storage_gen;
	return s->vec_line;
}

/* s->info_line of a sample that read /proc/interrupts. */
static int info_lines(struct ip_sampler *s, const struct ip_snapshot *snap)
{
	if (info_room(s, snap->nr_irqs) < 0)
		return -ENOMEM;
	s->nr_info = 0;
	for (int i = 0; i < snap->nr_irqs; i++)
		if (snap->irqs[i].info)
			s->info_line[s->nr_info++] = i;
	return 0;
}

/* ---- IRQ threads ---------------------------------------------------- */

static bool parse_thread_comm(const char *comm, unsigned *irq, bool *secondary)
{
	char *end;
	unsigned long n;

	if (strncmp(comm, "irq/", 4) != 0)
		return false;
	n = strtoul(comm + 4, &end, 10);
	if (end == comm + 4 || *end != '-' || n > UINT32_MAX)
		return false;
	*irq = (unsigned)n;
	*secondary = strncmp(end, "-s-", 3) == 0;
	return true;
}

static int rd(struct ip_root *r, const char *path, bool again, char **out, size_t *len)
{
	return again ? ip_root_read_again(r, path, true, out, len) : ip_root_read_attr(r, path, out, len);
}

/* stat's fields into @t: -ESRCH when it names no IRQ thread (any more). */
static int read_stat(struct ip_root *r, pid_t pid, bool again, struct ip_irq_thread *t)
{
	_cleanup_free_ char *stat = NULL;
	struct ip_pid_stat ps;
	char path[64];
	size_t len;
	int ret;

	num_path(path, sizeof(path), "proc/", (unsigned long)pid, "/stat");
	ret = rd(r, path, again, &stat, &len);
	if (ret < 0)
		return ret;
	if (ip_parse_pid_stat(stat, len, &ps, NULL) < 0)
		return -EINVAL;
	if (!parse_thread_comm(ps.comm, &t->irq, &t->secondary))
		return -ESRCH;
	t->pid = pid;
	/* not snprintf(): see num_path() */
	len = strnlen(ps.comm, sizeof(t->comm) - 1);
	memcpy(t->comm, ps.comm, len);
	t->comm[len] = '\0';
	t->utime = ps.utime;
	t->stime = ps.stime;
	t->policy = ps.policy;
	t->rt_priority = ps.rt_priority;
	t->last_cpu = ps.has_processor ? ps.processor : -1;
	return 0;
}

static int read_status(struct ip_root *r, pid_t pid, bool again, struct ip_pid_status *st)
{
	_cleanup_free_ char *status = NULL;
	char path[64];
	size_t len;
	int ret;

	num_path(path, sizeof(path), "proc/", (unsigned long)pid, "/status");
	ret = rd(r, path, again, &status, &len);
	if (ret < 0)
		return ret;
	return ip_parse_pid_status(status, len, st, NULL) < 0 ? -EINVAL : 0;
}

static void take_status(struct ip_irq_thread *t, const struct ip_pid_status *st)
{
	t->allowed = st->cpus_allowed;
	t->vcsw = st->voluntary_ctxt_switches;
	t->nvcsw = st->nonvoluntary_ctxt_switches;
}

/*
 * Reads one thread of the scan of all of /proc; -ENOENT when it is gone,
 * -ESRCH when it is no IRQ thread. The scan keeps no fds. comm is read
 * first: of every task in /proc only the IRQ threads go on to status and
 * stat. A known thread is read by read_known_thread() instead.
 */
static int read_thread(struct ip_root *r, pid_t pid, struct ip_irq_thread *t)
{
	_cleanup_free_ char *comm = NULL;
	struct ip_pid_status st;
	char path[64];
	int ret;

	memset(t, 0, sizeof(*t));
	num_path(path, sizeof(path), "proc/", (unsigned long)pid, "/comm");
	ret = ip_root_read_line(r, path, &comm);
	if (ret < 0)
		return ret;
	if (!parse_thread_comm(comm, &t->irq, &t->secondary))
		return -ESRCH;
	ret = read_status(r, pid, false, &st);
	if (ret < 0)
		return ret;
	ret = read_stat(r, pid, false, t);
	if (ret < 0)
		return ret;
	take_status(t, &st);
	return 0;
}

static bool asleep(char state)
{
	return state == 'S' || state == 'D' || state == 'I';
}

/*
 * Whether what @h read of stat still holds, by @st, the status just read:
 * the thread was asleep then and is now, and has been switched neither in
 * nor out since. A thread that ran went back to sleep through a counted
 * switch, and one woken but not yet run is not asleep, so do_task_stat()
 * (fs/proc/array.c) would print the same times, CPU and name: under
 * threadirqs or PREEMPT_RT most storage vectors' threads sleep through
 * most samples (their CPUs submit nothing), and stat was half of what a
 * sample read for them. The line's count and the affinity (status') must
 * not have changed either: on a kernel the thread ran for either, but a
 * tree, or another writer, need not keep them in step. Not seen: another
 * task's sched_setscheduler(2) on a sleeping thread, until the next full
 * scan reads every stat again or the thread runs; our own writes are told
 * (ip_sampler_forget_thread()). The name is status' escaped one: a name
 * it escapes differs from stat's, and that thread's stat is always read.
 */
static bool stat_holds(const struct ip_sampler *s, const struct held_thread *h,
		       const struct ip_pid_status *st, uint64_t irq_total)
{
	return !h->written && h->full_scans == s->nr_full_scans && asleep(h->state) &&
	       asleep(st->state) && st->has_ctxt && st->voluntary_ctxt_switches == h->t.vcsw &&
	       st->nonvoluntary_ctxt_switches == h->t.nvcsw && irq_total == h->irq_total &&
	       cpuset_equal(&st->cpus_allowed, &h->t.allowed) && strcmp(st->name, h->t.comm) == 0;
}

/* A known thread, through kept fds (ip_root_read_again()): its status, and
 * its stat unless that holds. Its name is then stat's field 2 rather than
 * a third read: the kernel writes both with proc_task_name(), so a pid
 * that now names another task is caught the same way. */
static int read_known_thread(struct ip_sampler *s, const struct ip_snapshot *snap,
			     struct held_thread *h, struct ip_irq_thread *t)
{
	const struct ip_irq *q = ip_snapshot_irq(snap, h->t.irq);
	uint64_t total = q ? q->total : UINT64_MAX;
	struct ip_pid_status st;
	int ret;

	ret = read_status(s->root, h->t.pid, true, &st);
	if (ret < 0)
		return ret;
	if (stat_holds(s, h, &st, total)) {
		*t = h->t;
	} else {
		memset(t, 0, sizeof(*t));
		ret = read_stat(s->root, h->t.pid, true, t);
		if (ret < 0)
			return ret;
	}
	take_status(t, &st);
	h->t = *t;
	h->irq_total = total;
	h->full_scans = s->nr_full_scans;
	h->state = st.state;
	h->written = false;
	return 0;
}

static int add_thread(struct ip_snapshot *snap, int *cap, const struct ip_irq_thread *t)
{
	if (snap->nr_threads == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		struct ip_irq_thread *n = realloc(snap->threads, sizeof(*n) * ncap);

		if (!n)
			return -ENOMEM;
		snap->threads = n;
		*cap = ncap;
	}
	snap->threads[snap->nr_threads++] = *t;
	return 0;
}

static int scan_threads(struct ip_sampler *s, struct ip_snapshot *snap)
{
	char **names = NULL;
	size_t n = 0;
	int cap = 0, ret;

	ret = ip_root_listdir(s->root, "proc", &names, &n);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	for (size_t i = 0; i < n; i++) {
		struct ip_irq_thread t;
		char *end;
		long pid = strtol(names[i], &end, 10);

		if (*end || pid <= 0)
			continue;
		if (read_thread(s->root, (pid_t)pid, &t) < 0)
			continue;
		ret = add_thread(snap, &cap, &t);
		if (ret < 0)
			break;
	}
	ip_strv_free(names, n);
	return ret < 0 ? ret : 0;
}

static int cmp_thread(const void *a, const void *b)
{
	pid_t x = ((const struct ip_irq_thread *)a)->pid, y = ((const struct ip_irq_thread *)b)->pid;

	return x < y ? -1 : x > y;
}

/*
 * The IRQs of @snap's threads (not the secondary ones unless @secondary),
 * sorted, in *@n: each line looked up in them, where walking every thread
 * for each line was all IRQs x all threads, 64 million steps a full scan
 * of a threadirqs machine with 8,000 IRQs. NULL on ENOMEM.
 */
static unsigned *thread_irqs(const struct ip_snapshot *snap, bool secondary, int *n)
{
	unsigned *v = malloc(sizeof(*v) * (snap->nr_threads ? snap->nr_threads : 1));

	*n = 0;
	if (!v)
		return NULL;
	for (int t = 0; t < snap->nr_threads; t++)
		if (secondary || !snap->threads[t].secondary)
			v[(*n)++] = snap->threads[t].irq;
	qsort(v, *n, sizeof(*v), cmp_uint);
	return v;
}

static bool has_thread_irq(const unsigned *irqs, int n, unsigned irq)
{
	bool found;

	ip_sorted_pos(irqs, (size_t)n, sizeof(*irqs), 0, irq, &found);
	return found;
}

/*
 * A capture need not hold the kernel command line. Under threadirqs or
 * PREEMPT_RT nearly every IRQ with an action has an irq/N thread, while
 * otherwise only drivers that ask for one do: more threads than half the
 * IRQs with actions is forced threading. Judged on a scan of every thread.
 */
static int infer_forced_threading(const struct ip_snapshot *snap, bool *forced)
{
	int with_action = 0, threaded = 0, n;
	unsigned *irqs = thread_irqs(snap, false, &n);

	if (!irqs)
		return -ENOMEM;
	for (int i = 0; i < snap->nr_irqs; i++) {
		const struct ip_irq *irq = &snap->irqs[i];

		if (!irq->actions[0] && !irq->unnamed_action)
			continue;
		with_action++;
		threaded += has_thread_irq(irqs, n, irq->irq);
	}
	free(irqs);
	*forced = with_action >= 4 && threaded * 2 > with_action;
	return 0;
}

/*
 * Only the tracked lines' threads are placed (emit_threads()), so only they
 * are kept and read again: under threadirqs or PREEMPT_RT every IRQ with an
 * action has one, and three files each of thousands of IRQs every cycle
 * would make the cost follow all IRQs instead of the tracked ones.
 */
static void keep_tracked_threads(struct ip_snapshot *snap)
{
	int k = 0;

	for (int i = 0; i < snap->nr_threads; i++) {
		const struct ip_irq *q = ip_snapshot_irq(snap, snap->threads[i].irq);

		if (q && q->tracked)
			snap->threads[k++] = snap->threads[i];
	}
	snap->nr_threads = k;
}

static bool tracked_without_thread(const struct ip_snapshot *snap, const unsigned *found, int n,
				   unsigned irq)
{
	const struct ip_irq *q = ip_snapshot_irq(snap, irq);

	return q && q->tracked && !has_thread_irq(found, n, irq);
}

/*
 * free_irq() stops a vector's IRQ thread and request_irq() makes another
 * under a new pid (kernel/irq/manage.c, __free_irq() and
 * setup_irq_thread()), with the line unchanged in between when the same
 * number and action come back. The scan that saw the old thread gone may
 * come between the two and find none; nothing later asked for another,
 * and the new thread stayed where the kernel started it while irqpilotd
 * said nothing of it (server-2s fixture: irq/38-ahci's new thread on 0-30
 * with its vector on CPU 20, for good). So such a tracked IRQ, and each
 * one still without its thread, is scanned for again each sample, for
 * REGAIN_NS after the last thread lost.
 */
static int note_orphans(struct ip_sampler *s, const struct ip_snapshot *snap)
{
	int n, k = 0;
	_cleanup_free_ unsigned *found = thread_irqs(snap, true, &n);
	unsigned *o = calloc((size_t)(s->nr_threads + s->nr_orphans) + 1, sizeof(*o));
	bool lost = false;

	if (!found || !o) {
		free(o);
		return -ENOMEM;
	}
	for (int i = 0; i < s->nr_threads; i++)
		if (tracked_without_thread(snap, found, n, s->threads[i].t.irq)) {
			o[k++] = s->threads[i].t.irq;
			lost = true;
		}
	if (lost)
		s->orphans_until_ns = snap->time_ns + REGAIN_NS;
	for (int i = 0; i < s->nr_orphans && snap->time_ns < s->orphans_until_ns; i++)
		if (tracked_without_thread(snap, found, n, s->orphans[i]))
			o[k++] = s->orphans[i];
	free(s->orphans);
	s->orphans = o;
	s->nr_orphans = k;
	return 0;
}

static int scan_all_threads(struct ip_sampler *s, struct ip_snapshot *snap)
{
	int ret = scan_threads(s, snap);

	if (ret < 0)
		return ret;
	ret = infer_forced_threading(snap, &s->threads_forced);
	if (ret < 0)
		return ret;
	keep_tracked_threads(snap);
	ret = note_orphans(s, snap);
	if (ret < 0)
		return ret;
	if (snap->nr_threads)
		ip_sort(snap->threads, snap->nr_threads, sizeof(*snap->threads), cmp_thread);
	free(s->threads);
	s->threads = calloc(snap->nr_threads ? snap->nr_threads : 1, sizeof(*s->threads));
	if (!s->threads)
		return -ENOMEM;
	/* their state unknown: the next sample reads each stat again */
	for (int i = 0; i < snap->nr_threads; i++)
		s->threads[i].t = snap->threads[i];
	s->nr_threads = snap->nr_threads;
	s->have_threads = true;
	return 0;
}

static int read_threads(struct ip_sampler *s, struct ip_snapshot *snap)
{
	int cap = 0, ret;
	bool lost = false;

	if (s->nr_orphans && snap->time_ns < s->orphans_until_ns)
		s->have_threads = false; /* note_orphans() */
	if (s->have_threads) {
		for (int i = 0; i < s->nr_threads; i++) {
			struct ip_irq_thread t;

			if (read_known_thread(s, snap, &s->threads[i], &t) < 0) {
				lost = true;
				break;
			}
			ret = add_thread(snap, &cap, &t);
			if (ret < 0)
				return ret;
		}
		if (!lost)
			goto out;
		free(snap->threads);
		snap->threads = NULL;
		snap->nr_threads = 0;
	}
	ret = scan_all_threads(s, snap);
	if (ret < 0)
		return ret;
out:
	if (s->threads_forced)
		snap->topo.forced_threading = true;
	return 0;
}

/* ---- softirqs, diskstats -------------------------------------------- */

static int read_softirqs(struct ip_root *r, struct ip_snapshot *snap, struct ip_diag *d)
{
	_cleanup_free_ char *text = NULL;
	uint64_t by_cpu[IP_CPU_MAX]; /* 8 KiB: kept off the heap, read each cycle */
	size_t len;
	int ncpus, ret;

	/* One record made whole on the first read (fs/proc/softirqs.c,
	 * proc_create_single(); fs/seq_file.c grows the buffer until it fits):
	 * a read shorter than asked is the end, not a second pread for 0. */
	ret = ip_root_read_again(r, "proc/softirqs", true, &text, &len);
	if (ret == -ENOENT)
		return 0; /* fixtures may leave it out: no softirq load then */
	if (ret < 0)
		return ip_diag_set(d, ret, "proc/softirqs: %s", strerror(-ret));
	ret = ip_parse_softirqs(text, len, "BLOCK", by_cpu, &ncpus, d);
	if (ret < 0)
		return ip_diag_prefix(d, ret, "proc/softirqs");
	memcpy(snap->block_softirq, by_cpu, sizeof(uint64_t) * snap->topo.nr_cpus);
	return 0;
}

/* What a disk has completed: the full sample's per-device count and the
 * idle probe's sum over every line are the same figure. */
static uint64_t completed_ios(const struct ip_diskstat *ds)
{
	return ds->rd_ios + ds->wr_ios + ds->discard_ios + ds->flush_ios;
}

static int diskstat_line(void *ctx, const struct ip_diskstat *ds)
{
	struct ip_snapshot *snap = ctx;
	unsigned dev[2] = { ds->major, ds->minor };

	if (!snap->have_all_ios)
		snap->disks_sig = UINT64_C(14695981039346656037);
	snap->disks_sig = fnv1a(snap->disks_sig, dev, sizeof(dev));
	snap->disks_sig = fnv1a(snap->disks_sig, ds->name, strlen(ds->name) + 1);
	snap->all_ios += completed_ios(ds);
	snap->have_all_ios = true;
	for (int i = 0; i < snap->storage.nr_devs; i++) {
		const struct ip_blockdev *b = &snap->storage.devs[i];

		if (strcmp(b->name, ds->name) == 0)
			snap->dc[i].ios = MAX(snap->dc[i].ios, completed_ios(ds));
		/*
		 * An NVMe multipath head's I/O is done by its paths, and which
		 * path took it is not told. Newer kernels count it on the head
		 * (nvme_mpath_start_request; 6.3 on as far as we know), older
		 * ones on the path: the
		 * larger of the two is the path's, the one that counts, and
		 * each path is held as busy as the head (max of two counts
		 * that only grow still only grows).
		 */
		if (b->mpath_head[0] && strcmp(b->mpath_head, ds->name) == 0)
			snap->dc[i].ios = MAX(snap->dc[i].ios, completed_ios(ds));
	}
	return 0;
}

/* Every line of /proc/diskstats to @cb; with @optional, a root without
 * the file (a fixture of the topology alone) has none and no error. */
static int each_diskstat(struct ip_root *r, bool optional, ip_diskstat_cb cb, void *ctx, struct ip_diag *d)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int ret = ip_root_read_again(r, "proc/diskstats", false, &text, &len);

	if (ret == -ENOENT && optional)
		return 0;
	if (ret < 0)
		return ip_diag_set(d, ret, "proc/diskstats: %s", strerror(-ret));
	ret = ip_parse_diskstats(text, len, cb, ctx, d);
	return ret < 0 ? ip_diag_prefix(d, ret, "proc/diskstats") : 0;
}

/* ---- disks that come and go without a uevent -------------------------- */

struct name_list {
	char **v;
	size_t n, cap;
};

static int list_disk(void *ctx, const struct ip_diskstat *ds)
{
	struct name_list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **v = reallocarray(l->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strdup(ds->name);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool in_names(char *const *v, size_t n, const char *name)
{
	return bsearch(&name, v, n, sizeof(*v), cmp_strp) != NULL;
}

/* A disk the storage scan knows of by this name, as itself or as the
 * multipath head its paths serve. */
static bool known_disk(const struct ip_storage *st, const char *name)
{
	for (int i = 0; i < st->nr_devs; i++)
		if (strcmp(st->devs[i].name, name) == 0 || strcmp(st->devs[i].mpath_head, name) == 0)
			return true;
	return false;
}

/*
 * Whether a disk the storage scan would see came or went between @old and
 * @now (sorted): one that went is one it knew; one that came has
 * sys/block/NAME/device, which partitions (not in sys/block), loop, dm,
 * md and zram disks (no device) lack, so that a host creating loop
 * devices by the minute does not rescan each time. Names the first one in @what.
 */
static bool storage_disks_differ(struct ip_sampler *s, char *const *old, size_t n_old, char *const *now,
				 size_t n_now, char *what, size_t n)
{
	for (size_t i = 0; i < n_old; i++)
		if (!in_names(now, n_now, old[i]) && known_disk(&s->storage, old[i])) {
			snprintf(what, n, "disk %s is gone from", old[i]);
			return true;
		}
	for (size_t i = 0; i < n_now; i++) {
		char dev[300];

		if (in_names(old, n_old, now[i]))
			continue;
		snprintf(dev, sizeof(dev), "sys/block/%s/device", now[i]);
		if (ip_root_exists(s->root, dev)) {
			snprintf(what, n, "disk %s is new in", now[i]);
			return true;
		}
	}
	return false;
}

/*
 * A disk added or removed behind a controller whose vectors stay (a SATA
 * or SAS disk, a namespace) changes no IRQ, so only a uevent told the
 * storage scan, and a missed one (a tree under --root, a monitor that
 * could not open or overran its buffer) left the device list stale for
 * good: /proc/diskstats, read every sample, shows it. Its hash is
 * compared each sample; its names only when that changed. After a scan
 * this sample ran (@rescanned), the names are taken as they are.
 */
static int disks_changed(struct ip_sampler *s, const struct ip_snapshot *snap, bool rescanned)
{
	struct name_list now = { 0 };
	struct ip_diag d = { "" };
	char what[300];
	int ret;

	if (!snap->have_all_ios || (s->disk_names && snap->disks_sig == s->disks_sig))
		return 0;
	ret = each_diskstat(s->root, true, list_disk, &now, &d);
	if (ret < 0) {
		ip_strv_free(now.v, now.n);
		return ret;
	}
	qsort(now.v, now.n, sizeof(*now.v), cmp_strp);
	if (s->disk_names && !rescanned && s->have_storage &&
	    storage_disks_differ(s, s->disk_names, s->nr_disk_names, now.v, now.n, what, sizeof(what))) {
		snprintf(s->note, sizeof(s->note), "%s /proc/diskstats: the block devices are scanned again", what);
		s->note_pending = true;
		s->storage_stale = true;
	}
	ip_strv_free(s->disk_names, s->nr_disk_names);
	/* an empty list is still a list: NULL is "not looked at yet" */
	s->disk_names = now.v ? now.v : calloc(1, sizeof(char *));
	s->nr_disk_names = now.n;
	s->disks_sig = snap->disks_sig;
	return s->disk_names ? 0 : -ENOMEM;
}


static int add_ios(void *ctx, const struct ip_diskstat *ds)
{
	*(uint64_t *)ctx += completed_ios(ds);
	return 0;
}

int ip_sampler_probe(struct ip_sampler *s, uint64_t *ios, bool *cpus_changed, struct ip_diag *d)
{
	_cleanup_free_ char *online = NULL;
	int ret;

	*ios = 0;
	*cpus_changed = true;
	ip_root_notice_replaced(s->root);
	ret = each_diskstat(s->root, false, add_ios, ios, d);
	if (ret < 0)
		return ret;
	if (!s->have_topo || !s->online_sig)
		return 0;
	ret = ip_root_read_line_again(s->root, "sys/devices/system/cpu/online", &online);
	if (ret < 0)
		return ip_diag_set(d, ret, "sys/devices/system/cpu/online: %s", strerror(-ret));
	if (strcmp(online, s->online_sig) != 0)
		return 0;
	/* a cgroup partition made isolated raises no uevent; a probe is
	 * seldom (idle), so a list found missing is looked for each time */
	ip_root_recheck_absent(s->root);
	return ip_topology_isolation_changed(s->root, &s->topo, cpus_changed, d);
}

const char *const *ip_sampler_probe_paths(int *n)
{
	/* ip_sampler_probe()'s, and ip_topology_isolation_changed()'s */
	static const char *const paths[] = {
		"proc/diskstats",
		"sys/devices/system/cpu/online",
		"sys/devices/system/cpu/isolated",
		"sys/fs/cgroup/cpuset.cpus.isolated",
	};

	*n = ARRAY_SIZE(paths);
	return paths;
}

const char *const *ip_sampler_activity_paths(int *n)
{
	/* every IRQ's counts (and the IRQ list itself), the BLOCK softirqs,
	 * and a tree's submissions: what the kernel advances per I/O besides
	 * /proc/diskstats, which the probe reads */
	static const char *const paths[] = {
		"proc/interrupts",
		"proc/softirqs",
		"irqpilot/submit",
	};

	*n = ARRAY_SIZE(paths);
	return paths;
}

/* ---- the whole sample ---------------------------------------------- */

static int ensure_topology(struct ip_sampler *s, struct ip_diag *d)
{
	_cleanup_free_ char *online = NULL;
	int ret = ip_root_read_line_again(s->root, "sys/devices/system/cpu/online", &online);

	if (ret < 0)
		return ip_diag_set(d, ret, "sys/devices/system/cpu/online: %s", strerror(-ret));
	/* Isolation changes without a hot-plug or a uevent (a cgroup v2
	 * partition made isolated): its one small file is read every
	 * sample, so that a vector leaves a CPU the cycle after it is fenced off. */
	if (s->have_topo && s->online_sig && strcmp(online, s->online_sig) == 0)
		return ip_topology_refresh_isolation(s->root, &s->topo, d);
	/* CPUs came or went: everything keyed by CPU must be read again. */
	ip_sampler_invalidate(s);
	ret = ip_topology_sample(s->root, &s->opts.overrides, &s->topo, d);
	if (ret < 0)
		return ret;
	s->have_topo = true;
	s->online_sig = TAKE_PTR(online);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/*
 * A fixture tree may carry its own clock (irqpilot/time_ns, what replays
 * and closed loops step); without one it runs on the monotonic clock. The
 * live root never has one: a stray /irqpilot/time_ns on a real machine
 * must not stop the daemon's clock.
 */
static int read_time(struct ip_root *r, uint64_t *t)
{
	long long v;
	int ret = ip_root_read_long_optional(r, "irqpilot/time_ns", &v);

	/* a replay step without its clock is damaged: this machine's clock
	 * would make the capture's rates of seconds those of hours */
	if (ret == -ENOENT && !ip_root_is_confined(r)) {
		*t = now_ns();
		return 0;
	}
	if (ret < 0 || v < 0)
		return ret < 0 ? ret : -EINVAL;
	*t = (uint64_t)v;
	return 0;
}

/* The time, the topology and the per-CPU arrays every snapshot has. */
static int sample_frame(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_diag *d)
{
	int ret, nr_cpus;

	ret = read_time(s->root, &snap->time_ns);
	if (ret < 0) {
		ip_diag_set(d, ret, "irqpilot/time_ns: %s",
			    ret == -ENOENT ? "missing, and a replay step runs on its own clock"
					   : "not a count of nanoseconds");
		return ret;
	}
	ret = ensure_topology(s, d);
	if (ret < 0)
		return ret;
	/* the previous snapshot's arrays, unless the topology changed */
	ret = ip_topology_copy_shared(&snap->topo, &s->topo, &s->topo_share);
	if (ret < 0)
		return ret;
	nr_cpus = snap->topo.nr_cpus;
	snap->irq_load = calloc(nr_cpus > 0 ? (size_t)nr_cpus : 1, sizeof(uint64_t));
	snap->block_softirq = calloc(nr_cpus > 0 ? (size_t)nr_cpus : 1, sizeof(uint64_t));
	if (!snap->irq_load || !snap->block_softirq)
		return -ENOMEM;
	return 0;
}

/* Whether the online CPUs are still those this sample began with (a list
 * that cannot be read is taken as changed). */
static bool online_unchanged(struct ip_sampler *s)
{
	_cleanup_free_ char *online = NULL;

	return s->online_sig &&
	       ip_root_read_line_again(s->root, "sys/devices/system/cpu/online", &online) == 0 &&
	       strcmp(online, s->online_sig) == 0;
}

/*
 * /proc/interrupts whole, read again once when a CPU went on- or offline
 * while it was read. show_interrupts() (kernel/irq/proc.c) prints the
 * header and then each line for_each_online_cpu(), holding no hot-plug
 * lock, and a big machine's file takes many read()s: a line printed after
 * a CPU left has a column fewer than the header (a parse error, the
 * cycle lost), one after a CPU came has one more, read as the chip's name
 * and shifting the rest. A file that is wrong with the CPUs still is wrong.
 */
static int read_interrupts_whole(struct ip_sampler *s, struct ip_snapshot *snap, uint64_t *sig,
				 struct ip_diag *d)
{
	int ret = read_interrupts(s, snap, sig, d);

	if ((ret == 0 || ret == -EINVAL) && !online_unchanged(s)) {
		if (d)
			d->msg[0] = '\0';
		ret = read_interrupts(s, snap, sig, d);
	}
	return ret;
}

/* The whole /proc/interrupts, and the storage scan again when the IRQ list
 * changed. The kept fds are looked up again first, and all closed when the
 * list changed, so a new vector reusing a number is never read through the
 * old one's (on the live root the old one's fails: struct vec_fds). */
static int sample_full(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_diag *d)
{
	uint64_t sig = 0, cpu0 = thread_cpu_ns();
	int ret;

	s->force_full = false;
	s->nr_full_scans++;
	/* every name is looked up again: files found missing (a newer
	 * kernel's, a fixture's), and a tree's kept files */
	fdc_lookup_again(&s->fdc, s->root);
	ip_root_lookup_again(s->root);
	ret = read_interrupts_whole(s, snap, &sig, d);
	if (ret < 0)
		return ret;
	s->full_cpu_ns = thread_cpu_ns() - cpu0;
	if (!s->have_storage || s->storage_stale || sig != s->irq_sig) {
		/* IRQs came or went, or changed hands: what was known of a
		 * number may belong to another vector now; or a disk came or
		 * went (disks_changed()). */
		fdc_close_all(&s->fdc);
		drop_vecs(s);
		ret = rescan_storage(s, snap, d);
		if (ret < 0)
			return ret;
		s->irq_sig = sig;
		s->have_threads = false;
		/* The tracked set may have changed: per-CPU counts must be
		 * kept for the new one. Rare: at start and on hot-plug. */
		ret = read_interrupts_whole(s, snap, &sig, d);
		if (ret < 0)
			return ret;
	}
	fdc_prune(&s->fdc, snap);
	if (!s->opts.full_scan_always && !ip_root_recording(s->root))
		return publish_full(s, snap);
	return 0;
}

/* The tracked vectors' counts: through the kept files when nothing asks for
 * a full scan and they all read, else the full scan. */
static int sample_irqs(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_diag *d)
{
	int ret;

	if (!need_full(s, snap)) {
		ret = read_fast(s, snap);
		if (ret == 0) {
			s->nr_fast_scans++;
			s->last_fast = true;
			return 0;
		}
		if (ret != -EAGAIN)
			return ret;
		memset(snap->irq_load, 0, sizeof(uint64_t) * snap->topo.nr_cpus);
	}
	return sample_full(s, snap, d);
}

/* What the storage model says about each IRQ and device: affinities,
 * threads, softirqs, disk statistics and submissions. */
static int sample_devices(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_diag *d)
{
	const int *line;
	int ret;

	ret = ip_storage_share(&snap->storage, &s->storage);
	if (ret < 0)
		return ret;
	if (!s->last_fast && info_lines(s, snap) < 0)
		return -ENOMEM;
	ret = read_irq_dirs(s, snap);
	if (ret < 0)
		return ret;
	line = vec_line_of(s, snap);
	if (!line)
		return -ENOMEM;
	link_devices(snap, line);
	classify_managed(snap, line, s->info_line, s->nr_info);
	ret = read_threads(s, snap);
	if (ret < 0) {
		ip_diag_set(d, ret, "proc: cannot list IRQ threads: %s", strerror(-ret));
		return ret;
	}
	ret = read_softirqs(s->root, snap, d);
	if (ret < 0)
		return ret;
	if (snap->storage.nr_devs) {
		snap->dc = calloc(snap->storage.nr_devs, sizeof(*snap->dc));
		if (!snap->dc)
			return -ENOMEM;
	}
	ret = each_diskstat(s->root, true, diskstat_line, snap, d);
	if (ret < 0)
		return ret;
	ret = disks_changed(s, snap, s->scanned_now);
	if (ret < 0)
		return ip_diag_set(d, ret, "proc/diskstats: listing the disks: %s", strerror(-ret));
	ret = ip_counters_sample(s->counters, s->root, snap, d);
	if (ret != IP_COUNTERS_UNREADABLE) {
		if (ret == 0)
			s->noted_counts[0] = '\0';
		return ret;
	}
	/* said again only when what is wrong changes */
	if (d && strcmp(s->noted_counts, d->msg) != 0) {
		snprintf(s->noted_counts, sizeof(s->noted_counts), "%s", d->msg);
		snprintf(s->note, sizeof(s->note),
			 "%.400s: not understood; no submission counts until it is (said once)", d->msg);
		s->note_pending = true;
	}
	if (d)
		d->msg[0] = '\0';
	return 0;
}

/*
 * After the full scan this sample published: which lines are passive until
 * the next one (see struct held_cpu) and whose /proc/irq/N/ holds till then
 * (fixed_dir), now that the sample says which are managed and which have
 * IRQ threads.
 */
static void mark_passive(struct ip_sampler *s, const struct ip_snapshot *snap)
{
	struct full_cache *fc = &s->fc;

	unsigned *irqs;
	int n;

	if (!fc->have || fc->nr != snap->nr_irqs)
		return;
	/* without the list, no line is passive: all are read, as when new */
	irqs = thread_irqs(snap, true, &n);
	for (int i = 0; i < snap->nr_irqs; i++) {
		const struct ip_irq *q = &snap->irqs[i];
		bool passive = q->tracked && q->info && q->info->have_proc && q->info->managed != IP_MANAGED_NO;

		fc->fixed_dir[i] = passive;
		fc->passive[i] = passive && irqs && !has_thread_irq(irqs, n, q->irq);
	}
	free(irqs);
}

int ip_sampler_sample(struct ip_sampler *s, struct ip_snapshot *snap, struct ip_diag *d)
{
	int ret;

	memset(snap, 0, sizeof(*snap));
	s->last_fast = s->fc_fresh = s->scanned_now = false;
	ip_root_notice_replaced(s->root);
	ret = sample_frame(s, snap, d);
	if (ret >= 0)
		ret = sample_irqs(s, snap, d);
	if (ret >= 0)
		ret = sample_devices(s, snap, d);
	if (ret < 0) {
		ip_snapshot_free(snap);
		return ret;
	}
	if (s->fc_fresh)
		mark_passive(s, snap);
	return 0;
}

/* ---- snapshot helpers ----------------------------------------------- */

const struct ip_irq_info ip_irq_info_none = {
	.chip = (char *)"", .hwirq = (char *)"", .trigger = (char *)"", .node = -1,
};

void ip_snapshot_free(struct ip_snapshot *s)
{
	if (!s)
		return;
	ip_snapshot_free_cq(s);
	free_irqs(s);
	if (s->dc) {
		for (int i = 0; i < s->storage.nr_devs; i++) {
			free(s->dc[i].submit);
			free(s->dc[i].complete);
		}
		free(s->dc);
	}
	ip_storage_free(&s->storage);
	ip_topology_free(&s->topo);
	free(s->irq_load);
	free(s->block_softirq);
	free(s->threads);
	memset(s, 0, sizeof(*s));
}

struct ip_irq *ip_snapshot_irq(const struct ip_snapshot *s, unsigned irq)
{
	/* /proc/interrupts lists IRQs in ascending order */
	bool found;
	size_t i = IP_SORTED_POS(s->irqs, s->nr_irqs, irq, irq, &found);

	return found ? &s->irqs[i] : NULL;
}

struct ip_irq *ip_snapshot_irq_next(const struct ip_snapshot *s, unsigned irq, size_t *cursor)
{
	bool found;
	size_t i = IP_SORTED_NEXT(s->irqs, s->nr_irqs, irq, irq, cursor, &found);

	return found ? &s->irqs[i] : NULL;
}

const char *ip_count_source_name(enum ip_count_source s)
{
	switch (s) {
	case IP_SRC_NONE:
		return "none";
	case IP_SRC_REPLAY:
		return "replay";
	case IP_SRC_MODULE:
		return "irqpilot_cq";
	case IP_SRC_PERF:
		return "perf";
	case IP_SRC_TASKS:
		return "tasks";
	case IP_SRC_INTERRUPTS:
		return "interrupts";
	}
	return "?";
}
