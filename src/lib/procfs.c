// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/macro.h"
#include "irqpilot/procfs.h"

/*
 * All parsers treat (text, len) as the only bounds: buffers come straight
 * from read() or from a fuzzer and are not NUL-terminated.
 */

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline bool is_digit(char c)
{
	return (unsigned char)(c - '0') < 10;
}

static inline bool is_letter(char c)
{
	return (unsigned char)((c | 0x20) - 'a') < 26;
}

/* A task state as task_state_array[] (fs/proc/array.c) spells it. */
static inline bool is_state_letter(char c)
{
	return is_letter(c);
}

static inline const char *skip_blank(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

static inline const char *skip_token(const char *p, const char *end)
{
	while (p < end && !is_blank(*p))
		p++;
	return p;
}

static inline const char *trim_end(const char *start, const char *end)
{
	while (end > start && (is_blank(end[-1]) || end[-1] == '\r'))
		end--;
	return end;
}

static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', end - p);

	return nl ? nl : end;
}

/* A short, printable copy of offending input for a diag message, so junk
 * bytes never end up raw in a log line. */
static const char *excerpt(char *buf, size_t size, const char *s, const char *end)
{
	size_t n = 0;

	for (; s < end && n + 4 < size; s++)
		buf[n++] = ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f) ? *s : '?';
	if (s < end && n + 3 < size) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

#define EXCERPT(s, e) excerpt((char[40]){ 0 }, 40, (s), (e))

/*
 * Digits without strtoull: this runs for every count column of an 8,000
 * line /proc/interrupts. Stops at the first non-digit; -EINVAL when there
 * is no digit, -ERANGE above 2^64-1 (*pp then still advances past them all).
 */
static int parse_u64_checked(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	bool over = false;

	if (p >= end || !is_digit(*p))
		return -EINVAL;
	do {
		unsigned dg = (unsigned char)*p - '0';

		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, dg, &v))
			over = true;
		p++;
	} while (p < end && is_digit(*p));
	*pp = p;
	if (over)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * The kernel pads every count column to at least ten places ("%10u "), and
 * on big machines most counts are 0, so an 8,000-line file is mostly runs
 * of spaces: step over them eight at a time.
 */
static inline const char *skip_count_pad(const char *p, const char *end)
{
	uint64_t w;

	while (end - p >= 8) {
		memcpy(&w, p, 8);
		if (w != UINT64_C(0x2020202020202020))
			break;
		p += 8;
	}
	return skip_blank(p, end);
}

/* Digits at *pp as a number: 19 digits cannot overflow, so only longer
 * numbers take the checked path. Every count of every file goes through
 * here, a tenth of a small machine's cycle. */
static inline int parse_u64(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp, *lim = end - p > 19 ? p + 19 : end;
	uint64_t v = 0;

	if (p >= end || !is_digit(*p))
		return -EINVAL;
	do
		v = v * 10 + (unsigned)((unsigned char)*p++ - '0');
	while (p < lim && is_digit(*p));
	if (p < end && is_digit(*p))
		return parse_u64_checked(pp, end, out);
	*pp = p;
	*out = v;
	return 0;
}

/* A whole blank-delimited token that must be an unsigned number <= max. */
static int token_u64(const char **pp, const char *end, uint64_t max, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v;
	int r;

	r = parse_u64(&p, end, &v);
	if (r == -ERANGE) {
		*pp = skip_token(p, end);
		return r;
	}
	if (r < 0 || (p < end && !is_blank(*p)))
		return -EINVAL;
	*pp = p;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A whole token "-?[0-9]+" within [min, max]. */
static int token_i64(const char **pp, const char *end, int64_t min, int64_t max, int64_t *out)
{
	const char *p = *pp;
	bool neg = false;
	uint64_t v;
	int r;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	r = token_u64(&p, end, UINT64_MAX, &v);
	if (r < 0)
		return r;
	*pp = p;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > INT64_MAX)
			return -ERANGE;
		*out = (int64_t)v;
	}
	if (*out < min || *out > max)
		return -ERANGE;
	return 0;
}

static const char *errword(int r)
{
	return r == -ERANGE ? "out of range" : "not a number";
}

/* ---- CPU column headers (/proc/interrupts, /proc/softirqs) ----------- */

static int parse_cpu_header(const char *p, const char *eol, int lineno, int *ncols, int *col_cpu,
			    struct ip_diag *d)
{
	int n = 0;

	for (p = skip_blank(p, eol); p < eol; p = skip_blank(p, eol)) {
		const char *tok = p;
		uint64_t id;
		int r;

		if (eol - p < 4 || memcmp(p, "CPU", 3) != 0)
			return ip_diag_set(d, -EINVAL,
					   "line %d: expected a CPU column header, got '%s'",
					   lineno, EXCERPT(tok, skip_token(tok, eol)));
		p += 3;
		r = token_u64(&p, eol, IP_CPU_MAX - 1, &id);
		if (r == -ERANGE)
			return ip_diag_set(d, r,
					   "line %d: column '%s' is beyond the %d supported CPUs",
					   lineno, EXCERPT(tok, skip_token(tok, eol)), IP_CPU_MAX);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: bad CPU column header '%s'", lineno,
					   EXCERPT(tok, skip_token(tok, eol)));
		/* The kernel prints CPUs in ascending order; anything else would
		 * make two columns claim one CPU. */
		if (n > 0 && (int)id <= col_cpu[n - 1])
			return ip_diag_set(d, -EINVAL, "line %d: CPU columns not ascending at '%s'",
					   lineno, EXCERPT(tok, skip_token(tok, eol)));
		col_cpu[n++] = (int)id;
	}
	if (n == 0)
		return ip_diag_set(d, -EINVAL, "line %d: expected a CPU column header, got '%s'",
				   lineno, EXCERPT(p, eol));
	*ncols = n;
	return 0;
}

/* Finds the first line (the header) or reports an empty input. */
static int first_line(const char *text, size_t len, const char **eol, struct ip_diag *d)
{
	if (len == 0)
		return ip_diag_set(d, -EINVAL, "empty input, no CPU column header");
	*eol = line_end(text, text + len);
	return 0;
}

/* ---- /proc/interrupts ---------------------------------------------- */

static bool is_trigger(const char *s, const char *e)
{
	size_t n = e - s;

	/* desc->name, if set, is appended as "Edge-name" */
	if (n >= 4 && memcmp(s, "Edge", 4) == 0)
		return n == 4 || s[4] == '-';
	if (n >= 5 && memcmp(s, "Level", 5) == 0)
		return n == 5 || s[5] == '-';
	return false;
}

static char *put_str(char *dst, const char *s, const char *e)
{
	memcpy(dst, s, e - s);
	dst[e - s] = '\0';
	return dst + (e - s) + 1;
}

struct irq_scratch {
	char *buf;
	size_t size;
};

static int scratch_reserve(struct irq_scratch *sc, size_t need)
{
	char *n;

	if (need <= sc->size)
		return 0;
	need = MAX(need, 2 * sc->size);
	n = realloc(sc->buf, need);
	if (!n)
		return -ENOMEM;
	sc->buf = n;
	sc->size = need;
	return 0;
}

/*
 * The first byte of [s, e) below 0x20 other than a tab, or NULL. Every
 * line's tail is checked at a full scan, a byte at a time a sixteenth of
 * a small machine's: eight at a time here. A byte below 0x20 sets its top
 * bit in (w - 0x20...) & ~w, and no word without one sets any (Bit
 * Twiddling Hacks' hasless(), exact for a bound up to 0x80); a word that
 * has one is looked at byte by byte, for the tab.
 */
static const char *find_control(const char *s, const char *e)
{
	const uint64_t ones = UINT64_C(0x0101010101010101);

	while (s < e) {
		const char *we = e - s > 8 ? s + 8 : e;
		uint64_t w;

		if (we - s == 8) {
			memcpy(&w, s, 8);
			if (!((w - ones * 0x20) & ~w & ones * 0x80)) {
				s = we;
				continue;
			}
		}
		for (; s < we; s++)
			if ((unsigned char)*s < 0x20 && *s != '\t')
				return s;
	}
	return NULL;
}

/*
 * Where a hwirq starts: digits, or a '-' before them. Up to 5.14,
 * show_interrupts() printed the hwirq " %*d" of (int)irq_data.hwirq
 * (kernel/irq/proc.c; " %*lu" came with a July 2021 patch, in 5.15 as
 * far as we know, whose reason was pSeries MSIs shown negative; it
 * changed /sys/kernel/irq/N/hwirq's "%d" too). A PCI MSI's hwirq holds the PCI
 * domain from bit 27 (pci_msi_domain_calc_hwirq(), drivers/pci/msi.c):
 * a Hyper-V guest's vPCI domain (drivers/pci/controller/pci-hyperv.c
 * takes it from the device's instance GUID) or any segment with bit 4
 * set prints negative on 5.4 and 5.10, "Hyper-V PCIe MSI
 * -671088640-edge  nvme0q0". Cut there, the chip ended at "Hyper-V" and
 * the action was "PCIe MSI -671088640-edge      nvme0q0": no queue
 * number, no admin vector.
 */
static inline bool hwirq_start(const char *s, const char *e)
{
	return s < e && (is_digit(*s) || (*s == '-' && e - s > 1 && is_digit(s[1])));
}

/*
 * x86's flow name with no hwirq before it. show_interrupts() prints the
 * hwirq only for an IRQ with a domain, " %*s" of "" otherwise, and then
 * "-%-8s" desc->name. Xen's event channel IRQs have no domain
 * (drivers/xen/events/events_base.c allocates bare descriptors and names
 * the flow "event", "virq", "ipi" or "pirq"), so an HVM or PV guest's
 * lines read "xen-dyn-lateeoi    -event     blkif". The "-event" was taken
 * for the action's start: every event channel's name became
 * "-event     blkif", and no disk or NIC found its IRQ by name. It is kept
 * in the hwirq field, as "33-edge" is.
 */
static inline bool flow_alone(const char *s, const char *e)
{
	return e - s > 1 && *s == '-' && s[1] >= 'a' && s[1] <= 'z'; /* flow names are lower case */
}

/*
 * The end of the chip column. show_interrupts() prints the chip's name
 * with " %8s", and some names hold spaces: "SiFive PLIC" (every device
 * interrupt of a RISC-V PLIC, drivers/irqchip/irq-sifive-plic.c), "RISC-V
 * INTC" (irq-riscv-intc.c), "BRCM STB PCIe MSI" (the Raspberry Pi 4's
 * PCIe MSI, drivers/pci/controller/pcie-brcmstb.c). Cut at the first
 * blank, the rest of the name became the action ("PLIC  8 Level
 * virtio0"), and no device was found by its IRQ's name. A name's words
 * are one space apart and the hwirq (a number) follows the name, while a
 * trigger or an action comes after a wider gap, so words are added only
 * while a number closes them.
 */
static const char *chip_end(const char *s, const char *e)
{
	const char *first = skip_token(s, e), *t = first;

	for (int words = 1; words < 6; words++) {
		const char *n = skip_blank(t, e);

		if (n >= e)
			break;
		if (hwirq_start(n, e))
			return t;
		if (n - t != 1 || is_trigger(n, skip_token(n, e)))
			break;
		t = skip_token(n, e);
	}
	return first;
}

/*
 * Whether a line with no action text has one action named "", told by its
 * trailing blanks as show_interrupts() (kernel/irq/proc.c) writes them:
 * the last fixed field is padded to 8 (" %-8s" the trigger under
 * GENERIC_IRQ_SHOW_LEVEL, "-%-8s" the flow handler's name, x86's "-edge"),
 * and an action follows as "  %s". A devicetree platform device's
 * pdev->name is "" (drivers/of/platform.c of_device_alloc()), and a driver
 * that requests its IRQ under it (drivers/mmc/host/mtk-sd.c) shows such a
 * line. Blanks the rule does not give (a file edited by hand) read as no
 * action, as before.
 */
static bool unnamed_action(const char *hw_s, const char *hw_e, const char *tr_s, const char *tr_e, const char *e,
			   const char *eol)
{
	const char *dash = hw_e > hw_s ? memrchr(hw_s, '-', (size_t)(hw_e - hw_s)) : NULL;
	size_t len = tr_e > tr_s ? (size_t)(tr_e - tr_s) : dash ? (size_t)(hw_e - dash - 1) : 8;
	size_t pad = len < 8 ? 8 - len : 0, blanks = 0;

	while (e + blanks < eol && e[blanks] == ' ')
		blanks++;
	return e + blanks == eol && blanks == pad + 2;
}

static int parse_irq_tail(const char *p, const char *eol, int lineno, struct irq_scratch *sc,
			  struct ip_irq_line *l, struct ip_diag *d)
{
	const char *s, *e, *q, *chip_s, *chip_e, *hw_s, *hw_e, *tr_s, *tr_e;
	char *o;

	s = skip_blank(p, eol);
	e = trim_end(s, eol);
	/* seq_printf("%s") cannot print a NUL: one is a damaged read. Other
	 * control bytes are a driver's name (request_irq() takes any string,
	 * dev_name() comes from firmware); refusing the file for one stopped
	 * every cycle on the machine. The name is kept as the kernel gave it:
	 * JSON escapes it, the report's lines and irqctl clean it. */
	q = find_control(s, e);
	if (q && (q = memchr(q, '\0', (size_t)(e - q))))
		return ip_diag_set(d, -EINVAL, "line %d: control byte 0x%02x in IRQ %u", lineno,
				   (unsigned char)*q, l->irq);
	if (scratch_reserve(sc, (e - s) + 4) < 0)
		return ip_diag_set(d, -ENOMEM, "line %d: out of memory", lineno);

	chip_s = s;
	chip_e = chip_end(s, e);
	s = skip_blank(chip_e, e);
	hw_s = hw_e = s;
	if (hwirq_start(s, e) || flow_alone(s, e)) {
		hw_e = skip_token(s, e);
		s = skip_blank(hw_e, e);
	}
	tr_s = tr_e = s;
	q = skip_token(s, e);
	if (s < e && is_trigger(s, q)) {
		tr_e = q;
		s = skip_blank(tr_e, e);
	}

	o = sc->buf;
	l->chip = o;
	o = put_str(o, chip_s, chip_e);
	l->hwirq = o;
	o = put_str(o, hw_s, hw_e);
	l->trigger = o;
	o = put_str(o, tr_s, tr_e);
	l->actions = o;
	put_str(o, s, e);
	l->unnamed_action = s >= e && unnamed_action(hw_s, hw_e, tr_s, tr_e, e, eol);
	return 0;
}

int ip_parse_interrupts_header(const char *text, size_t len, struct ip_irq_header *hdr, size_t *used,
			       struct ip_diag *d)
{
	const char *eol = NULL;
	int r;

	hdr->ncols = 0;
	hdr->name_tails = hdr->first_tail = 0;
	r = first_line(text, len, &eol, d);
	if (r < 0)
		return r;
	r = parse_cpu_header(text, eol, 1, &hdr->ncols, hdr->col_cpu, d);
	if (r < 0)
		return r;
	*used = (size_t)(eol - text) + (eol < text + len ? 1 : 0);
	return 0;
}

int ip_parse_interrupts(const char *text, size_t len, struct ip_irq_header *hdr, ip_irq_line_cb cb,
			void *ctx, struct ip_diag *d)
{
	struct ip_irq_header local;
	size_t used;
	int r;

	if (!hdr)
		hdr = &local;
	r = ip_parse_interrupts_header(text, len, hdr, &used, d);
	if (r < 0)
		return r;
	return ip_parse_interrupts_body(text + used, len - used, hdr, 2, cb, ctx, d);
}

/*
 * "NMI:", "LOC:", "IPI0:", "Err:": per-CPU or total counters that are not
 * IRQ lines, skipped. A line with no label at all is the rest of a name
 * holding a newline: show_interrupts() (kernel/irq/proc.c) prints each
 * action's name with seq_printf("%s"), and request_irq() takes any
 * string, user space's among them (the consumer label of a GPIO line
 * requested with edge detection, gpiolib-cdev.c, keeps its newlines).
 * Refused, one such name stopped every full scan on the machine; it is
 * skipped and counted in @hdr, and the name before it ends at the
 * newline. Not on the first line after the header, where no name can
 * have begun: that is garbage.
 */
/*
 * "IPI0:1234567890": arm64 and riscv print their IPI lines "%*s%u:%s"
 * with prec - 1, "IPI", i and a blank only when prec >= 4
 * (arch/arm64/kernel/smp.c arch_show_interrupts(), arch/riscv/kernel/smp.c
 * show_ipi_stats(); 5.10 to 6.12 at least; 32-bit arm's show_ipi_list()
 * always has "%u: "), then "%10u " a count. With prec 3 (fewer than
 * 1,000 IRQs: most arm64 machines) a count of ten digits, a billion
 * rescheduling IPIs on a busy CPU, follows the colon with no blank. A
 * label of letters and digits, its colon, then only digits.
 */
static bool glued_counter_label(const char *lab, const char *t)
{
	const char *c = memchr(lab, ':', (size_t)(t - lab));

	if (!c || c == lab || c + 1 == t || !is_letter(*lab))
		return false;
	for (const char *q = lab; q < c; q++)
		if (!is_digit(*q) && !is_letter(*q))
			return false;
	for (const char *q = c + 1; q < t; q++)
		if (!is_digit(*q))
			return false;
	return true;
}

static int check_counter_label(const char *lab, const char *eol, int lineno,
			       struct ip_irq_header *hdr, struct ip_diag *d)
{
	const char *t = skip_token(lab, eol);

	if (t[-1] == ':' || glued_counter_label(lab, t))
		return 0;
	if (lineno <= 2)
		return ip_diag_set(d, -EINVAL, "line %d: expected 'IRQ:' label, got '%s'", lineno,
				   EXCERPT(lab, t));
	if (!hdr->name_tails++)
		hdr->first_tail = lineno;
	return 0;
}

/* "N:" at *pp (== lab); *pp is left after the colon. */
static int parse_irq_label(const char **pp, const char *eol, const char *lab, int lineno,
			   uint64_t *irq, struct ip_diag *d)
{
	int r = parse_u64(pp, eol, irq);

	if (r == 0 && *irq > UINT_MAX)
		r = -ERANGE;
	if (r == 0 && (*pp == eol || **pp != ':'))
		r = -EINVAL;
	if (r < 0) {
		ip_diag_set(d, r, "line %d: bad IRQ number '%s'", lineno,
			    EXCERPT(lab, skip_token(lab, eol)));
		return r;
	}
	(*pp)++;
	return 0;
}

/*
 * 0 columns as show_interrupts() (kernel/irq/proc.c) prints them: " %10u"
 * in 6.1's "%10u " after "N: ", seq_put_decimal_ull_width(p, " ", cnt,
 * 10) in later kernels; both are ten spaces and a '0' a column, then a
 * blank or the end of the line. Most columns of a big machine's file are
 * that, and the full scan parses all of them: @zeros (ZERO_1, ZERO_4) is
 * compared whole, GCC inlines the memcmp. Anything else is left to the
 * general path.
 */
static inline bool zero_columns(const char *p, const char *eol, const char *zeros, ptrdiff_t w)
{
	return eol - p >= w && memcmp(p, zeros, (size_t)w) == 0 && (eol - p == w || is_blank(p[w]));
}

#define ZERO_1 "          0"
#define ZERO_4 ZERO_1 ZERO_1 ZERO_1 ZERO_1

/* A line's counts, and which of them are not 0: a consumer of a big
 * machine's line walks a handful of columns, not all 1,024. */
struct line_cols {
	uint64_t counts[IP_CPU_MAX];
	int nonzero[IP_CPU_MAX];
	int nr_nonzero;
};

/* One count per header column, no fewer; *pp is left after the last. */
static int parse_count_columns(const char **pp, const char *eol, int ncols, int lineno,
			       unsigned irq, struct line_cols *lc, struct ip_diag *d)
{
	uint64_t *counts = lc->counts;
	const char *p = *pp;
	int r;

	lc->nr_nonzero = 0;
	for (int i = 0; i < ncols; i++) {
		const char *tok;

		/* four at once while four remain: a big machine's lines are
		 * runs of them */
		if (i + 4 <= ncols && zero_columns(p, eol, ZERO_4, 44)) {
			memset(&counts[i], 0, 4 * sizeof(*counts));
			p += 44;
			i += 3;
			continue;
		}
		if (zero_columns(p, eol, ZERO_1, 11)) {
			counts[i] = 0;
			p += 11;
			continue;
		}
		p = skip_count_pad(p, eol);
		tok = p;
		if (p == eol || !is_digit(*p))
			return ip_diag_set(
				d, -EINVAL,
				"line %d: IRQ %u has %d count columns, header has %d (next: '%s')",
				lineno, irq, i, ncols, EXCERPT(tok, skip_token(tok, eol)));
		r = parse_u64(&p, eol, &counts[i]);
		if (r == 0 && p < eol && !is_blank(*p))
			r = -EINVAL;
		if (r < 0) {
			ip_diag_set(d, r, "line %d: IRQ %u count column %d '%s' is %s", lineno, irq,
				    i, EXCERPT(tok, skip_token(tok, eol)),
				    r == -ERANGE ? "above 2^64-1" : "not a number");
			return r;
		}
		if (counts[i])
			lc->nonzero[lc->nr_nonzero++] = i;
	}
	*pp = p;
	return 0;
}

/* One IRQ line from lab (its first non-blank) to eol, handed to cb. */
static int parse_irq_line(const char *lab, const char *eol, const struct ip_irq_header *hdr,
			  int lineno, struct irq_scratch *sc, struct line_cols *lc, ip_irq_line_cb cb,
			  void *ctx, struct ip_diag *d)
{
	const char *p = lab;
	struct ip_irq_line l;
	uint64_t irq;
	int r;

	r = parse_irq_label(&p, eol, lab, lineno, &irq, d);
	if (r < 0)
		return r;
	r = parse_count_columns(&p, eol, hdr->ncols, lineno, (unsigned)irq, lc, d);
	if (r < 0)
		return r;
	l = (struct ip_irq_line){
		.irq = (unsigned)irq,
		.lineno = lineno,
		.counts = lc->counts,
		.ncounts = hdr->ncols,
		.nonzero = lc->nonzero,
		.nr_nonzero = lc->nr_nonzero,
	};
	r = parse_irq_tail(p, eol, lineno, sc, &l, d);
	if (r < 0)
		return r;
	/* The callback explains its own refusal in d. */
	return cb ? cb(ctx, &l) : 0;
}

int ip_parse_interrupts_body(const char *text, size_t len, struct ip_irq_header *hdr, int first_lineno,
			     ip_irq_line_cb cb, void *ctx, struct ip_diag *d)
{
	const char *end = text + len, *p, *eol;
	struct irq_scratch sc = { NULL, 0 };
	struct line_cols lc;
	int lineno = first_lineno - 1, r = 0;

	for (p = text; p < end; p = eol < end ? eol + 1 : end) {
		lineno++;
		eol = line_end(p, end);
		p = skip_blank(p, eol);
		if (p == eol)
			continue;
		if (!is_digit(*p))
			r = check_counter_label(p, eol, lineno, hdr, d);
		else
			r = parse_irq_line(p, eol, hdr, lineno, &sc, &lc, cb, ctx, d);
		if (r < 0)
			break;
	}
	free(sc.buf);
	return r < 0 ? r : 0;
}

int ip_split_actions(const char *actions, char *buf, size_t bufsize, const char **names, int max)
{
	const char *p = actions;
	size_t used = 0;
	int n = 0;

	if (!actions || !buf || !names)
		return 0;
	while (*p && n < max) {
		const char *s = p, *q = p, *e;

		/* The kernel joins actions with ", "; a bare ',' may be part
		 * of a name. */
		while (*q && !(q[0] == ',' && (q[1] == ' ' || q[1] == '\0')))
			q++;
		e = q;
		while (s < e && is_blank(*s))
			s++;
		while (e > s && is_blank(e[-1]))
			e--;
		if (e > s) {
			size_t k = e - s;

			if (used + k + 1 > bufsize)
				break;
			put_str(buf + used, s, e);
			names[n++] = buf + used;
			used += k + 1;
		}
		if (!*q)
			break;
		p = q + 1;
	}
	return n;
}

/* ---- /proc/softirqs ------------------------------------------------ */

int ip_parse_softirqs(const char *text, size_t len, const char *row, uint64_t *by_cpu, int *ncpus,
		      struct ip_diag *d)
{
	const char *end = text + len, *p, *eol = NULL;
	int col_cpu[IP_CPU_MAX];
	int ncols = 0, lineno = 1, r;
	size_t rowlen = row ? strlen(row) : 0;
	bool found = false;

	if (by_cpu)
		memset(by_cpu, 0, IP_CPU_MAX * sizeof(*by_cpu));
	if (ncpus)
		*ncpus = 0;
	r = first_line(text, len, &eol, d);
	if (r < 0)
		return r;
	r = parse_cpu_header(text, eol, 1, &ncols, col_cpu, d);
	if (r < 0)
		return r;
	if (ncpus)
		*ncpus = ncols;

	for (p = eol; p < end; p = eol) {
		const char *lab, *labe;
		bool want;

		p++;
		if (p >= end)
			break;
		lineno++;
		eol = line_end(p, end);
		lab = p = skip_blank(p, eol);
		if (p == eol)
			continue;
		labe = skip_token(p, eol);
		if (labe[-1] != ':')
			return ip_diag_set(d, -EINVAL, "line %d: expected 'NAME:' label, got '%s'",
					   lineno, EXCERPT(lab, labe));
		want = row && (size_t)(labe - 1 - lab) == rowlen && memcmp(lab, row, rowlen) == 0;
		/* Only @row's counts are parsed: at 10 rows of a column per
		 * CPU the rest were nine tenths of the file's cost, read every
		 * cycle, for numbers no caller uses. */
		if (!want)
			continue;
		p = labe;
		for (int i = 0; i < ncols; i++) {
			const char *tok;
			uint64_t v;

			p = skip_blank(p, eol);
			tok = p;
			if (p == eol)
				return ip_diag_set(
					d, -EINVAL, "line %d: %.*s has %d columns, header has %d",
					lineno, (int)MIN(labe - 1 - lab, 32), lab, i, ncols);
			r = token_u64(&p, eol, UINT64_MAX, &v);
			if (r < 0)
				return ip_diag_set(d, r, "line %d: count '%s' in column %d is %s",
						   lineno, EXCERPT(tok, skip_token(tok, eol)), i,
						   r == -ERANGE ? "above 2^64-1" : "not a number");
			if (by_cpu)
				by_cpu[col_cpu[i]] = v;
		}
		p = skip_blank(p, eol);
		if (trim_end(p, eol) != p)
			return ip_diag_set(d, -EINVAL, "line %d: more columns than the header's %d",
					   lineno, ncols);
		found = true;
		break;
	}
	if (!found)
		return ip_diag_set(d, -ENOENT, "no '%s' row", row ? row : "(null)");
	return 0;
}

/* ---- /sys/kernel/irq/N/per_cpu_count ------------------------------- */

int ip_parse_per_cpu_count(const char *text, size_t len, const ip_cpuset *possible, uint32_t *by_cpu,
			   int nr_cpus, struct ip_diag *d)
{
	const char *p = text, *end = text + len;
	int want = cpuset_count(possible), n = 0, cpu = cpuset_first(possible);
	/* possible CPUs without a hole (nearly every machine): the next CPU is
	 * cpu + 1, and a run of zeros is stepped over four at a time */
	int last = cpuset_last(possible);
	bool dense = cpu >= 0 && last - cpu + 1 == want;

	if (by_cpu && nr_cpus > 0)
		memset(by_cpu, 0, sizeof(*by_cpu) * (size_t)nr_cpus);
	/* The newline is written last, by its own scnprintf: without it the
	 * buffer filled up and the numbers before may be cut. */
	if (!len || text[len - 1] != '\n')
		return ip_diag_set(d, -EMSGSIZE,
				   "truncated after %zu bytes (no newline: the kernel cuts it at PAGE_SIZE)", len);
	end--;
	if (p == end)
		return ip_diag_set(d, -EINVAL, "no counts, %d possible CPUs", want);
	for (;;) {
		const char *tok;
		uint64_t v = 0;
		int r = 0;

		/* Most counts of a large machine are 0, and the buffer was zeroed;
		 * four of them are fields cpu..cpu + 3, and another follows. */
		while (dense && cpu + 4 <= last && end - p > 8 && memcmp(p, "0,0,0,0,", 8) == 0) {
			p += 8;
			n += 4;
			cpu += 4;
		}
		tok = p;
		if (*p == '0' && end - p > 1 && p[1] == ',')
			p++;
		else
			r = parse_u64(&p, end, &v);
		if (r == -EINVAL) {
			const char *comma = memchr(tok, ',', (size_t)(end - tok));

			return ip_diag_set(d, r, "field %d: '%s' is not a count", n + 1,
					   EXCERPT(tok, comma ? comma : end));
		}
		if (r == -ERANGE || v > UINT32_MAX)
			return ip_diag_set(d, -ERANGE, "field %d: '%s' is above 2^32-1", n + 1,
					   EXCERPT(tok, p));
		n++;
		if (cpu < 0)
			return ip_diag_set(d, -EINVAL, "more counts than the %d possible CPUs", want);
		if (by_cpu && v && cpu < nr_cpus)
			by_cpu[cpu] = (uint32_t)v;
		if (dense)
			cpu = cpu < last ? cpu + 1 : -1;
		else
			cpu = cpuset_next(possible, cpu + 1);
		if (p == end)
			break;
		if (*p != ',')
			return ip_diag_set(d, -EINVAL, "field %d: junk '%s' after the count", n,
					   EXCERPT(p, end));
		p++;
	}
	if (n != want)
		return ip_diag_set(d, -EINVAL, "%d counts for %d possible CPUs", n, want);
	return 0;
}

/* ---- /proc/PID/stat, /proc/PID/status, /proc/PID/io ------------------ */

static int reject_nul(const char *text, size_t len, struct ip_diag *d)
{
	const char *z = memchr(text, '\0', len);

	if (!z)
		return 0;
	int line = 1;

	for (const char *q = text; q < z; q++)
		line += *q == '\n';
	return ip_diag_set(d, -EINVAL, "line %d: NUL byte in input", line);
}

/* Fields 1 and 2, "pid (comm)"; *pp is left after comm's closing ')'. */
static int parse_stat_pid_comm(const char *text, const char *end, struct ip_pid_stat *s,
			       const char **pp, struct ip_diag *d)
{
	const char *p, *open, *close;
	uint64_t u;
	int r;

	p = skip_blank(text, end);
	r = token_u64(&p, end, INT_MAX, &u);
	if (r < 0)
		return ip_diag_set(d, r, "line 1: pid (field 1) is %s", errword(r));
	s->pid = (pid_t)u;
	open = skip_blank(p, end);
	if (open == end || *open != '(')
		return ip_diag_set(d, -EINVAL, "line 1: no '(' before comm (field 2)");
	/* comm may itself hold ") ", so only the last ')' closes it. */
	close = memrchr(open + 1, ')', end - open - 1);
	if (!close)
		return ip_diag_set(d, -EINVAL, "line 1: no ')' after comm (field 2)");
	memcpy(s->comm, open + 1, MIN((size_t)(close - open - 1), sizeof(s->comm) - 1));
	*pp = close + 1;
	return 0;
}

/* A whole token "-?[0-9]{1,18}" at @p: *@after is set past it. Such a
 * number fits in 64 bits, signed or not, so a field only checked need not
 * have its value made; anything else takes the caller's checked path. */
static inline bool short_number(const char *p, const char *end, const char **after)
{
	const char *s = p + (p < end && *p == '-'), *q = s;

	while (q < end && is_digit(*q))
		q++;
	if (q == s || q - s >= 19 || (q < end && !is_blank(*q)))
		return false;
	*after = q;
	return true;
}

/*
 * Past an only-checked stat field at @p, the space before it included, or
 * NULL for the checked loop: a 0 (most of an IRQ thread's), any number
 * short_number() takes, or rsslim's RLIM_INFINITY, "%lu" of ~0UL
 * (do_task_stat(), fs/proc/array.c), which it does not (20 digits).
 */
static inline const char *skip_stat_field(const char *p, const char *end)
{
	static const char inf[] = "18446744073709551615";
	const char *q;

	if (end - p < 2 || *p != ' ')
		return NULL;
	if (p[1] == '0' && (end - p == 2 || p[2] == ' '))
		return p + 2;
	if (short_number(p + 1, end, &q))
		return q;
	if (end - p > (ptrdiff_t)sizeof(inf) - 1 && memcmp(p + 1, inf, sizeof(inf) - 1) == 0 &&
	    (end - p == (ptrdiff_t)sizeof(inf) || is_blank(p[sizeof(inf)])))
		return p + sizeof(inf);
	return NULL;
}

/* The fields parse_stat_field() keeps, by number: a case added there is
 * added here, or ip_parse_pid_stat() steps over it unread. */
#define STAT_KEPT                                                                                  \
	((UINT64_C(1) << 3) | (UINT64_C(1) << 4) | (UINT64_C(1) << 14) | (UINT64_C(1) << 15) |     \
	 (UINT64_C(1) << 18) | (UINT64_C(1) << 19) | (UINT64_C(1) << 22) | (UINT64_C(1) << 39) |   \
	 (UINT64_C(1) << 40) | (UINT64_C(1) << 41) | (UINT64_C(1) << 42))

/*
 * Field 3 onwards, one token from *pp: the fields irqpilot uses go to *s,
 * the others are only checked. *tokp is where the caller's error excerpt
 * starts; an unused field above INT64_MAX is re-read from it, as unsigned.
 */
static int parse_stat_field(struct ip_pid_stat *s, int field, const char **pp,
			    const char **tokp, const char *end)
{
	const char *p = *pp, *tok = *tokp;
	uint64_t u;
	int64_t i;
	int r = 0;

	switch (field) {
	case 3:
		p = skip_token(p, end);
		if (p - tok != 1 || !is_state_letter(*tok))
			r = -EINVAL;
		s->state = *tok;
		break;
	case 4:
		r = token_u64(&p, end, INT_MAX, &u);
		s->ppid = (pid_t)u;
		break;
	case 14:
		r = token_u64(&p, end, UINT64_MAX, &s->utime);
		break;
	case 15:
		r = token_u64(&p, end, UINT64_MAX, &s->stime);
		break;
	case 18:
		r = token_i64(&p, end, LONG_MIN, LONG_MAX, &i);
		s->priority = (long)i;
		break;
	case 19:
		r = token_i64(&p, end, LONG_MIN, LONG_MAX, &i);
		s->nice = (long)i;
		break;
	case 22:
		r = token_u64(&p, end, UINT64_MAX, &s->starttime);
		break;
	case 39:
		r = token_u64(&p, end, IP_CPU_MAX - 1, &u);
		s->processor = (int)u;
		s->has_processor = true;
		break;
	case 40:
		r = token_u64(&p, end, UINT_MAX, &u);
		s->rt_priority = (unsigned)u;
		break;
	case 41:
		r = token_u64(&p, end, UINT_MAX, &u);
		s->policy = (unsigned)u;
		break;
	case 42:
		r = token_u64(&p, end, UINT64_MAX, &s->delayacct_blkio);
		break;
	default:
		/* Unused fields: only their syntax matters. A number of under
		 * 19 digits fits either way and is only stepped over: some 40
		 * of the 52 fields, per IRQ thread, every cycle. */
		if (short_number(p, end, &p))
			break;
		r = token_i64(&p, end, INT64_MIN, INT64_MAX, &i);
		if (r == -ERANGE)
			r = token_u64(&tok, end, UINT64_MAX, &u);
		break;
	}
	*pp = p;
	*tokp = tok;
	return r;
}

int ip_parse_pid_stat(const char *text, size_t len, struct ip_pid_stat *out, struct ip_diag *d)
{
	const char *end = text + len, *p = NULL;
	struct ip_pid_stat s = { 0 };
	int r, field;

	if (len == 0)
		return ip_diag_set(d, -EINVAL, "line 1: empty stat");
	r = reject_nul(text, len, d);
	if (r < 0)
		return r;
	/* One line; anything after its newline is not ours. */
	end = trim_end(text, line_end(text, end));

	r = parse_stat_pid_comm(text, end, &s, &p, d);
	if (r < 0)
		return r;
	for (field = 3;; field++) {
		const char *tok;

		/* A field only checked, after do_task_stat()'s single space
		 * (fs/proc/array.c): stepped over here, as the loop below would
		 * step it, without its way through. 40 of the 52 fields of each
		 * IRQ thread, every cycle. */
		if (field < 64 && !(STAT_KEPT >> field & 1) && (tok = skip_stat_field(p, end))) {
			p = tok;
			continue;
		}
		if (p < end && !is_blank(*p))
			return ip_diag_set(d, -EINVAL, "line 1: junk '%s' before field %d",
					   EXCERPT(p, skip_token(p, end)), field);
		p = skip_blank(p, end);
		if (p == end)
			break;
		tok = p;
		r = parse_stat_field(&s, field, &p, &tok, end);
		if (r < 0)
			return ip_diag_set(d, r, "line 1: field %d '%s' is %s", field,
					   EXCERPT(tok, skip_token(tok, end)),
					   field == 3 ? "not a state letter" : errword(r));
	}
	if (field <= 22)
		return ip_diag_set(d, -EINVAL,
				   "line 1: truncated, %d fields but starttime is field 22",
				   field - 1);
	if (out)
		*out = s;
	return 0;
}

/* Iterates "Key:<blanks>value" lines; *val is trimmed of blanks. */
typedef int (*kv_cb)(void *ctx, const char *key, size_t keylen, const char *val, const char *vale,
		     int lineno, struct ip_diag *d);

/* Every key length, for parse_kv() */
#define KV_ALL UINT64_MAX

/*
 * Every line but a blank one must have its ':'. Bit n of @want says
 * whether @cb may want a line whose key is n bytes long (KV_ALL: every
 * key, also one of 64 bytes or more): only those have their value trimmed
 * and handed on, without a call for the others. /proc/PID/status has some
 * 40 lines (proc_pid_status(), fs/proc/array.c), 6 of them wanted, read
 * for every IRQ thread every cycle.
 */
static int parse_kv(const char *text, size_t len, const char *what, kv_cb cb, uint64_t want,
		    void *ctx, struct ip_diag *d)
{
	const char *end = text + len, *p, *eol;
	int lineno = 0, r;

	if (len == 0)
		return ip_diag_set(d, -EINVAL, "line 1: empty %s", what);
	r = reject_nul(text, len, d);
	if (r < 0)
		return r;
	for (p = text; p < end; p = eol + 1) {
		const char *colon, *v;

		lineno++;
		eol = line_end(p, end);
		colon = memchr(p, ':', eol - p);
		if (!colon && trim_end(p, eol) != p)
			return ip_diag_set(d, -EINVAL, "line %d: no ':' in '%s'", lineno,
					   EXCERPT(p, eol));
		if (colon && (want == KV_ALL || (colon - p < 64 && (want >> (colon - p) & 1)))) {
			v = skip_blank(colon + 1, eol);
			r = cb(ctx, p, colon - p, v, trim_end(v, eol), lineno, d);
			if (r < 0)
				return r;
		}
		if (eol == end)
			break;
	}
	return 0;
}

static bool key_is(const char *key, size_t keylen, const char *name)
{
	return strlen(name) == keylen && memcmp(key, name, keylen) == 0;
}

static int kv_u64(const char *key, size_t keylen, const char *v, const char *ve, uint64_t max,
		  uint64_t *out, int lineno, struct ip_diag *d)
{
	const char *p = v;
	int r = token_u64(&p, ve, max, out);

	if (r == 0 && p != ve)
		r = -EINVAL;
	if (r < 0)
		return ip_diag_set(d, r, "line %d: %.*s '%s' is %s", lineno, (int)MIN(keylen, 32),
				   key, EXCERPT(v, ve), errword(r));
	return 0;
}

struct status_ctx {
	struct ip_pid_status *s;
	bool vol, nonvol;
};

static int status_kv(void *ctx, const char *key, size_t keylen, const char *v, const char *ve,
		     int lineno, struct ip_diag *d)
{
	struct status_ctx *c = ctx;
	uint64_t u;
	int r;

	if (key_is(key, keylen, "Name")) {
		size_t n = MIN((size_t)(ve - v), sizeof(c->s->name) - 1);

		memcpy(c->s->name, v, n);
		c->s->name[n] = '\0';
		return 0;
	}
	if (key_is(key, keylen, "State")) {
		/* task_state(): "State:\t%s" of "R (running)", "S (sleeping)"... */
		if (v == ve || !is_state_letter(*v) ||
		    (ve - v > 1 && v[1] != ' '))
			return ip_diag_set(d, -EINVAL, "line %d: State '%s' is not a state letter",
					   lineno, EXCERPT(v, ve));
		c->s->state = *v;
		return 0;
	}
	if (key_is(key, keylen, "PPid")) {
		r = kv_u64(key, keylen, v, ve, INT_MAX, &u, lineno, d);
		c->s->ppid = (pid_t)u;
		return r;
	}
	if (key_is(key, keylen, "voluntary_ctxt_switches")) {
		c->vol = true;
		return kv_u64(key, keylen, v, ve, UINT64_MAX, &c->s->voluntary_ctxt_switches,
			      lineno, d);
	}
	if (key_is(key, keylen, "nonvoluntary_ctxt_switches")) {
		c->nonvol = true;
		return kv_u64(key, keylen, v, ve, UINT64_MAX, &c->s->nonvoluntary_ctxt_switches,
			      lineno, d);
	}
	if (key_is(key, keylen, "Cpus_allowed_list")) {
		char buf[IP_CPULIST_MAX];

		if ((size_t)(ve - v) >= sizeof(buf))
			return ip_diag_set(d, -ERANGE, "line %d: Cpus_allowed_list too long",
					   lineno);
		put_str(buf, v, ve);
		r = cpuset_parse_list(&c->s->cpus_allowed, buf);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: Cpus_allowed_list '%s' is %s", lineno,
					   EXCERPT(v, ve),
					   r == -ERANGE ? "beyond the supported CPUs"
							: "not a CPU list");
		c->s->has_cpus_allowed = true;
	}
	return 0;
}

/* The keys status_kv() may want, by length: Name and PPid, State,
 * Cpus_allowed_list, voluntary_ctxt_switches, nonvoluntary_ctxt_switches. */
#define STATUS_KEYS                                                                          \
	((UINT64_C(1) << 4) | (UINT64_C(1) << 5) | (UINT64_C(1) << 17) | (UINT64_C(1) << 23) | \
	 (UINT64_C(1) << 26))

int ip_parse_pid_status(const char *text, size_t len, struct ip_pid_status *out, struct ip_diag *d)
{
	struct ip_pid_status s = { 0 };
	struct status_ctx c = { .s = &s };
	int r;

	r = parse_kv(text, len, "status", status_kv, STATUS_KEYS, &c, d);
	if (r < 0)
		return r;
	s.has_ctxt = c.vol && c.nonvol;
	if (out)
		*out = s;
	return 0;
}

struct io_ctx {
	struct ip_pid_io *io;
	bool rd, wr;
};

static int io_kv(void *ctx, const char *key, size_t keylen, const char *v, const char *ve,
		 int lineno, struct ip_diag *d)
{
	struct io_ctx *c = ctx;

	if (key_is(key, keylen, "read_bytes")) {
		c->rd = true;
		return kv_u64(key, keylen, v, ve, UINT64_MAX, &c->io->read_bytes, lineno, d);
	}
	if (key_is(key, keylen, "write_bytes")) {
		c->wr = true;
		return kv_u64(key, keylen, v, ve, UINT64_MAX, &c->io->write_bytes, lineno, d);
	}
	return 0;
}

int ip_parse_pid_io(const char *text, size_t len, struct ip_pid_io *out, struct ip_diag *d)
{
	struct ip_pid_io io = { 0 };
	struct io_ctx c = { .io = &io };
	int r;

	r = parse_kv(text, len, "io", io_kv, KV_ALL, &c, d);
	if (r < 0)
		return r;
	if (!c.rd || !c.wr)
		return ip_diag_set(d, -EINVAL, "no %s line", c.rd ? "write_bytes" : "read_bytes");
	if (out)
		*out = io;
	return 0;
}

/* ---- /proc/diskstats ---------------------------------------------- */

/*
 * 14 fields before 4.18, 18 with the discard fields, 20 with the flush
 * fields (5.5+). Numbered from 1 on the whole line: 1 major, 2 minor,
 * 3 name, 4 reads completed, 8 writes completed, 12 in flight, 13 io_ticks,
 * 15 discards completed, 19 flushes completed.
 */
#define DISK_MAX_NUMS 17
/* The counts struct ip_diskstat keeps, by index in v[] (field - 4). */
#define DISK_USED (1u << 0 | 1u << 4 | 1u << 8 | 1u << 9 | 1u << 11 | 1u << 15)
/*
 * The counts after the name into v[] (*n of them), when the line is what
 * the kernel prints (diskstats_show(), block/genhd.c: "%4d %7d %pg " and
 * then "%lu "/"%u " counts, one space apart): numbers (parse_u64())
 * between single spaces. False for anything else, which the checked loop
 * reads for its error. Every line of /proc/diskstats is read each cycle,
 * a phone's has a hundred (partitions, dm, zram, loop devices): one pass,
 * no call per count.
 */
static bool plain_disk_counts(const char *p, const char *eol, uint64_t *v, int *n)
{
	int k = 0;

	for (;;) {
		while (p < eol && *p == ' ')
			p++;
		if (p == eol)
			break;
		if (k == DISK_MAX_NUMS)
			return false;
		if (DISK_USED & (1u << k)) {
			if (parse_u64(&p, eol, &v[k]) < 0)
				return false;
		} else {
			/* a count no caller reads: its digits checked, not
			 * summed; 20 or more may be above 2^64-1, which the
			 * checked loop reports */
			const char *s = p;

			while (p < eol && is_digit(*p))
				p++;
			if (p == s || p - s > 19)
				return false;
			v[k] = 0;
		}
		if (p < eol && *p != ' ')
			return false;
		k++;
	}
	*n = k;
	return true;
}

/* The counts after the name, each checked: the line plain_disk_counts()
 * turned down, with its error. */
static int checked_disk_counts(const char *p, const char *eol, int lineno, uint64_t *v, int *np,
			       struct ip_diag *d)
{
	int n = 0, r;

	for (p = skip_blank(p, eol); p < eol; p = skip_blank(p, eol)) {
		const char *tok = p;

		if (n == DISK_MAX_NUMS)
			return ip_diag_set(d, -EINVAL,
					   "line %d: more than 20 fields, expected 14, 18 or 20", lineno);
		v[n] = 0;
		r = token_u64(&p, eol, UINT64_MAX, &v[n]);
		if (r == -EINVAL && trim_end(tok, eol) == tok)
			break; /* trailing '\r' */
		if (r < 0)
			return ip_diag_set(d, r, "line %d: field %d '%s' is %s", lineno, n + 4,
					   EXCERPT(tok, skip_token(tok, eol)),
					   r == -ERANGE ? "above 2^64-1" : "not a number");
		n++;
	}
	*np = n;
	return 0;
}

/* Field 3: there, shorter than @size, no control bytes. */
static int check_disk_name(const char *name, const char *namee, size_t size, int lineno,
			   struct ip_diag *d)
{
	if (name == namee)
		return ip_diag_set(d, -EINVAL, "line %d: truncated, no device name", lineno);
	if ((size_t)(namee - name) >= size)
		return ip_diag_set(d, -EINVAL, "line %d: device name too long", lineno);
	for (const char *q = name; q < namee; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return ip_diag_set(d, -EINVAL,
					   "line %d: control byte 0x%02x in device name", lineno,
					   (unsigned char)*q);
	return 0;
}

int ip_parse_diskstats(const char *text, size_t len, ip_diskstat_cb cb, void *ctx,
		       struct ip_diag *d)
{
	const char *end = text + len, *p, *eol;
	int lineno = 0, r;

	for (p = text; p < end; p = eol < end ? eol + 1 : end) {
		uint64_t maj, min, v[DISK_MAX_NUMS];
		const char *tok, *name, *namee;
		char namebuf[256];
		struct ip_diskstat s;
		int n = 0;

		lineno++;
		eol = line_end(p, end);
		p = skip_blank(p, eol);
		if (trim_end(p, eol) == p)
			goto next;
		tok = p;
		r = token_u64(&p, eol, UINT_MAX, &maj);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: major '%s' is %s", lineno,
					   EXCERPT(tok, skip_token(tok, eol)), errword(r));
		tok = p = skip_blank(p, eol);
		r = token_u64(&p, eol, UINT_MAX, &min);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: minor '%s' is %s", lineno,
					   EXCERPT(tok, skip_token(tok, eol)), errword(r));
		name = p = skip_blank(p, eol);
		namee = p = skip_token(p, eol);
		r = check_disk_name(name, namee, sizeof(namebuf), lineno, d);
		if (r < 0)
			return r;
		if (!plain_disk_counts(p, eol, v, &n)) {
			r = checked_disk_counts(p, eol, lineno, v, &n, d);
			if (r < 0)
				return r;
		}
		if (n != 11 && n != 15 && n != 17)
			return ip_diag_set(d, -EINVAL, "line %d: %d fields, expected 14, 18 or 20",
					   lineno, n + 3);
		put_str(namebuf, name, namee);
		s = (struct ip_diskstat){
			.major = (unsigned)maj,
			.minor = (unsigned)min,
			.name = namebuf,
			.rd_ios = v[0],
			.wr_ios = v[4],
			.in_flight = v[8],
			.io_ticks = v[9],
			.discard_ios = n >= 15 ? v[11] : 0,
			.flush_ios = n >= 17 ? v[15] : 0,
		};
		if (cb) {
			r = cb(ctx, &s);
			if (r < 0)
				return r;
		}
	next:
		if (eol == end)
			break;
	}
	return 0;
}

/* ---- /proc/stat --------------------------------------------------- */

int ip_parse_stat(const char *text, size_t len, struct ip_cpu_times *by_cpu, ip_cpuset *present,
		  struct ip_diag *d)
{
	const char *end = text + len, *p, *eol;
	ip_cpuset seen;
	int lineno = 0, r;

	cpuset_zero(&seen);
	if (by_cpu)
		memset(by_cpu, 0, IP_CPU_MAX * sizeof(*by_cpu));
	if (present)
		cpuset_zero(present);
	for (p = text; p < end; p = eol < end ? eol + 1 : end) {
		const char *tok;
		uint64_t cpu, v[8] = { 0 };
		int n = 0;

		lineno++;
		eol = line_end(p, end);
		/* "cpu " is the total; "intr", "ctxt", ... are not per CPU. */
		if (eol - p < 4 || memcmp(p, "cpu", 3) != 0 || !is_digit(p[3]))
			goto next;
		tok = p + 3;
		p = tok;
		r = token_u64(&p, eol, IP_CPU_MAX - 1, &cpu);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: CPU number 'cpu%s' is %s", lineno,
					   EXCERPT(tok, skip_token(tok, eol)),
					   r == -ERANGE ? "beyond the supported CPUs"
							: "not a number");
		if (cpuset_test(&seen, (int)cpu))
			return ip_diag_set(d, -EINVAL, "line %d: cpu%d listed twice", lineno,
					   (int)cpu);
		cpuset_set(&seen, (int)cpu);
		for (p = skip_blank(p, eol); p < eol; p = skip_blank(p, eol)) {
			uint64_t x;

			tok = p;
			r = token_u64(&p, eol, UINT64_MAX, &x);
			if (r == -EINVAL && trim_end(tok, eol) == tok)
				break;
			if (r < 0)
				return ip_diag_set(d, r, "line %d: cpu%d column %d '%s' is %s",
						   lineno, (int)cpu, n + 1,
						   EXCERPT(tok, skip_token(tok, eol)),
						   r == -ERANGE ? "above 2^64-1" : "not a number");
			if (n < 8)
				v[n] = x;
			n++;
		}
		/* user nice system idle exist on every kernel; later columns
		 * were added over time and read as 0 when missing. */
		if (n < 4)
			return ip_diag_set(d, -EINVAL,
					   "line %d: cpu%d has %d columns, expected at least 4",
					   lineno, (int)cpu, n);
		if (by_cpu)
			by_cpu[cpu] = (struct ip_cpu_times){ v[0], v[1], v[2], v[3],
							     v[4], v[5], v[6], v[7] };
	next:
		if (eol == end)
			break;
	}
	if (cpuset_empty(&seen))
		return ip_diag_set(d, -EINVAL, "no cpuN lines");
	if (present)
		*present = seen;
	return 0;
}

/* ---- replay counters ---------------------------------------------- */

/*
 * A line exactly "DEVICE CPU COUNT" (single spaces, nothing around them),
 * as every line a tree's writer puts there is: its fields without the
 * checks and excerpts the line by line path spends on each, which made
 * this small file a tenth of a steady sample. false: take that path.
 */
static bool plain_counter_line(const char *p, const char *eol, const char **deve, uint64_t *cpu,
			       uint64_t *count)
{
	const char *q = p;

	while (q < eol && (unsigned char)*q > ' ' && *q != 0x7f)
		q++;
	if (q == p || q == eol || *q != ' ' || q - p >= 256)
		return false;
	*deve = q++;
	if (parse_u64(&q, eol, cpu) < 0 || q == eol || *q != ' ' || *cpu > IP_CPU_MAX - 1)
		return false;
	q++;
	return parse_u64(&q, eol, count) == 0 && q == eol;
}

int ip_parse_counters(const char *text, size_t len, ip_counter_cb cb, void *ctx, struct ip_diag *d)
{
	const char *end = text + len, *p, *eol;
	int lineno = 0, r;

	for (p = text; p < end; p = eol < end ? eol + 1 : end) {
		const char *dev, *deve, *tok, *le;
		char devbuf[256];
		uint64_t cpu, count;

		lineno++;
		eol = line_end(p, end);
		if (plain_counter_line(p, eol, &deve, &cpu, &count)) {
			dev = p;
			goto found;
		}
		le = trim_end(p, eol);
		dev = skip_blank(p, le);
		if (dev == le)
			goto next;
		deve = skip_token(dev, le);
		if ((size_t)(deve - dev) >= sizeof(devbuf))
			return ip_diag_set(d, -EINVAL, "line %d: device name too long", lineno);
		for (const char *q = dev; q < deve; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				return ip_diag_set(
					d, -EINVAL,
					"line %d: control byte 0x%02x, expected 'DEVICE CPU COUNT'",
					lineno, (unsigned char)*q);
		tok = p = skip_blank(deve, le);
		if (p == le)
			return ip_diag_set(d, -EINVAL,
					   "line %d: expected 'DEVICE CPU COUNT', got '%s'", lineno,
					   EXCERPT(dev, le));
		r = token_u64(&p, le, IP_CPU_MAX - 1, &cpu);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: CPU '%s' is %s", lineno,
					   EXCERPT(tok, skip_token(tok, le)),
					   r == -ERANGE ? "out of range" : "not a number");
		tok = p = skip_blank(p, le);
		if (p == le)
			return ip_diag_set(d, -EINVAL,
					   "line %d: expected 'DEVICE CPU COUNT', got '%s'", lineno,
					   EXCERPT(dev, le));
		r = token_u64(&p, le, UINT64_MAX, &count);
		if (r < 0)
			return ip_diag_set(d, r, "line %d: count '%s' is %s", lineno,
					   EXCERPT(tok, skip_token(tok, le)),
					   r == -ERANGE ? "above 2^64-1" : "not a number");
		if (skip_blank(p, le) != le)
			return ip_diag_set(d, -EINVAL,
					   "line %d: junk after 'DEVICE CPU COUNT': '%s'", lineno,
					   EXCERPT(skip_blank(p, le), le));
	found:
		if (cb) {
			put_str(devbuf, dev, deve);
			r = cb(ctx, devbuf, (int)cpu, count);
			if (r < 0)
				return r;
		}
	next:
		if (eol == end)
			break;
	}
	return 0;
}
