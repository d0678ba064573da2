#include "interposer/compute.h"

#include <string.h>

int gs_cc_critical_busy(const struct gs_cc_tenant *t, uint64_t now)
{
    if (!t->critical || !t->alive || t->crit_launch_ns == 0)
        return 0;
    if (t->crit_idle_ns >= t->crit_launch_ns)
        return 0; /* everything it launched has been seen finished */
    /* Not "now - launch": a launch stamped after our clock read would wrap. */
    return t->crit_launch_ns + GS_CC_CRIT_STALE_NS > now;
}

int gs_cc_critical_recent(const struct gs_cc_tenant *t, uint64_t now)
{
    if (gs_cc_critical_busy(t, now))
        return 1;
    if (!t->critical || !t->alive || t->crit_idle_ns == 0)
        return 0;
    /* A stamp may come from after our clock read, by microseconds; one from
     * far ahead is not believed (it would keep us shrunk for as long). */
    if (t->crit_idle_ns > now + GS_CC_CRIT_STALE_NS)
        return 0;
    return t->crit_idle_ns + GS_CC_CRIT_LINGER_NS > now; /* not "now - idle": see above */
}

/* The critical tenants' latest launch and "finished" stamps. */
static void critical_stamps(const struct gs_cc_tenant *t, int n, int self, uint64_t *launch,
                            uint64_t *idle)
{
    *launch = *idle = 0;
    for (int i = 0; i < n; i++) {
        if (i == self || !t[i].critical || !t[i].alive)
            continue;
        if (t[i].crit_launch_ns > *launch)
            *launch = t[i].crit_launch_ns;
        if (t[i].crit_idle_ns > *idle)
            *idle = t[i].crit_idle_ns;
    }
}

/* Learns the gaps between the critical tenants' requests: a gap is sampled
 * when we see them busy after having seen them idle. The launch stamp we then
 * read may be a later launch of the request than its first (we look every
 * GS_CC_CRIT_POLL_NS at most, less often while our own kernel runs), so the
 * guard trusts the shortest gap; a request that began and ended unseen is no
 * sample. Gaps longer than GS_CC_GUARD_GAP_MAX_NS are pauses, not a serving
 * loop's rhythm. (Not the linger: a serving loop may wait longer than that
 * between requests, and its requests would then go unguarded.)
 * 1: they are idle now, and crit_idle_seen is their latest "finished" stamp. */
static void learn_pause(struct gs_cc_self *me, uint64_t gap, uint64_t pub_max);

static int guard_observe(struct gs_cc_self *me, const struct gs_cc_tenant *t, int n, int self,
                         int critical_busy, uint64_t pub_max)
{
    uint64_t launch, idle;
    critical_stamps(t, n, self, &launch, &idle);
    if (critical_busy) {
        /* idle unchanged: no whole request ran between the two looks */
        if (me->crit_idle_seen && idle == me->crit_idle_seen && launch > idle &&
            launch - idle < GS_CC_GUARD_GAP_MAX_NS) {
            uint64_t gap = launch - me->crit_idle_seen;
            me->gaps[me->ngaps++ % GS_CC_GUARD_GAPS] = gap;
            if (pub_max && gap > GS_CC_PAUSE_FACTOR * pub_max &&
                gap > pub_max + GS_CC_GUARD_HOLD_NS)
                learn_pause(me, gap, pub_max);
        }
        me->crit_idle_seen = 0;
        return 0;
    }
    if (!idle || idle < launch)
        return 0; /* none, or a launch not seen finished that is no longer believed busy */
    me->crit_idle_seen = idle;
    return 1;
}

/* A pause between the critical tenants' bursts: longer than the hold after
 * the longest gap of their published rhythm (pub_max), so one in which the
 * guard let us go. Pauses learnt against a hold more than twice as long or
 * short are of another loop (or another phase of it): forgotten. */
static void learn_pause(struct gs_cc_self *me, uint64_t gap, uint64_t pub_max)
{
    uint64_t of = pub_max + GS_CC_GUARD_HOLD_NS;
    if (me->pauses_of && (of > 2 * me->pauses_of || me->pauses_of > 2 * of))
        me->npauses = 0;
    me->pauses_of = of;
    me->pauses[me->npauses++ % GS_CC_GUARD_PAUSES] = gap;
}

int gs_cc_guard_pauses(const struct gs_cc_self *me, uint64_t *shortest, uint64_t *longest)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    if (me->npauses < GS_CC_GUARD_PAUSES)
        return 0;
    for (unsigned i = 0; i < GS_CC_GUARD_PAUSES; i++) {
        lo = me->pauses[i] < lo ? me->pauses[i] : lo;
        hi = me->pauses[i] > hi ? me->pauses[i] : hi;
    }
    if (shortest)
        *shortest = lo;
    if (longest)
        *longest = hi;
    return hi <= 2 * lo;
}

/* Where the pauses between the critical tenants' bursts have a rhythm: when
 * the next burst may come (one shortest pause after their "finished" stamp)
 * and when the guard lets go of it (GS_CC_GUARD_HOLD_NS past the longest). */
static int burst_due(const struct gs_cc_self *me, uint64_t *due, uint64_t *release)
{
    uint64_t p_short, p_long;
    if (!gs_cc_guard_pauses(me, &p_short, &p_long))
        return 0;
    *due = me->crit_idle_seen + p_short;
    *release = me->crit_idle_seen + p_long + GS_CC_GUARD_HOLD_NS;
    return 1;
}

int gs_cc_gaps_rhythm(const uint64_t *gaps, unsigned ngaps, uint64_t *shortest, uint64_t *median)
{
    unsigned k = ngaps < GS_CC_GUARD_GAPS ? ngaps : GS_CC_GUARD_GAPS;
    if (shortest)
        *shortest = UINT64_MAX;
    if (median)
        *median = 0;
    if (k == 0)
        return 0;
    uint64_t g[GS_CC_GUARD_GAPS];
    memcpy(g, gaps, k * sizeof g[0]);
    for (unsigned i = 1; i < k; i++) /* insertion sort: at most 8 */
        for (unsigned j = i; j > 0 && g[j - 1] > g[j]; j--) {
            uint64_t x = g[j];
            g[j] = g[j - 1];
            g[j - 1] = x;
        }
    if (shortest)
        *shortest = g[0];
    if (median)
        *median = g[k / 2];
    return g[0] * GS_CC_GUARD_RHYTHM_DIV >= g[k / 2];
}

int gs_cc_guard_gaps(const struct gs_cc_self *me, uint64_t *shortest, uint64_t *median)
{
    return gs_cc_gaps_rhythm(me->gaps, me->ngaps, shortest, median);
}

int gs_cc_guard_short(const struct gs_cc_self *me, uint64_t *longest)
{
    unsigned k = me->ngaps < GS_CC_GUARD_GAPS ? me->ngaps : GS_CC_GUARD_GAPS;
    uint64_t m = 0;
    for (unsigned i = 0; i < k; i++)
        if (me->gaps[i] > m)
            m = me->gaps[i];
    if (longest)
        *longest = m;
    return me->guard_ns && me->ngaps >= GS_CC_GUARD_GAPS / 2 && m <= me->guard_ns;
}

void gs_cc_prime_launched(struct gs_cc_prime *p, uint64_t now)
{
    /* The first launch since our work was seen finished begins a request. */
    if (p->idle_ns && p->idle_ns >= p->launch_ns && now >= p->idle_ns &&
        now - p->idle_ns < GS_CC_GUARD_GAP_MAX_NS) {
        uint64_t gap = now - p->idle_ns, shortest;
        gs_cc_gaps_rhythm(p->gaps, p->ngaps, &shortest, NULL);
        if (p->ngaps >= GS_CC_GUARD_GAPS && gap > GS_CC_PAUSE_FACTOR * shortest &&
            p->pauses < GS_CC_GUARD_GAPS / 2) {
            p->pauses++; /* a pause between bursts: the rhythm stays */
        } else {
            p->pauses = 0;
            p->gaps[p->ngaps++ % GS_CC_GUARD_GAPS] = gap;
        }
    }
    p->launch_ns = now;
}

void gs_cc_prime_idle(struct gs_cc_prime *p, uint64_t now)
{
    if (now > p->idle_ns)
        p->idle_ns = now;
}

uint64_t gs_cc_rhythm(const struct gs_cc_prime *p)
{
    uint64_t gap, longest = 0;
    /* Stricter than the guard's own rule, since this one is exact (its own
     * stamps, every gap): the whole ring, and the longest gap at most twice
     * the shortest. Requests at random pass the rhythm rule by chance now and
     * then (the shortest of 8 exponential gaps is half their median about one
     * time in 14), and every hold then costs for nothing; a serving loop's
     * gaps differ by its jitter. */
    if (p->ngaps < GS_CC_GUARD_GAPS)
        return 0;
    int rhythm = gs_cc_gaps_rhythm(p->gaps, p->ngaps, &gap, NULL);
    for (unsigned i = 0; i < GS_CC_GUARD_GAPS; i++)
        longest = p->gaps[i] > longest ? p->gaps[i] : longest;
    /* Gaps that short (a decoder's tokens, the host between them) hold
     * nothing of a best-effort tenant's, jitter or not: published as they
     * are, so it holds through the burst (compute.h). */
    if (longest > GS_CC_RHYTHM_SHORT_NS && (!rhythm || longest > 2 * gap))
        return 0;
    /* Gaps are under GS_CC_GUARD_GAP_MAX_NS: their microseconds fit 32 bits. */
    return (longest / 1000) << 32 | (gap / 1000 ? gap / 1000 : 1);
}

void gs_cc_rhythm_unpack(uint64_t word, uint64_t *shortest_ns, uint64_t *longest_ns)
{
    *shortest_ns = (word & 0xffffffffu) * 1000;
    *longest_ns = (word >> 32) * 1000;
    if (*longest_ns < *shortest_ns)
        *longest_ns = *shortest_ns;
}

uint64_t gs_cc_prime_at(const struct gs_cc_prime *p, uint64_t lead_ns)
{
    uint64_t gap;
    if (!lead_ns || !p->idle_ns || p->launch_ns > p->idle_ns)
        return 0; /* off, never idle, or a request under way */
    if (p->ngaps < GS_CC_GUARD_GAPS / 2 || !gs_cc_gaps_rhythm(p->gaps, p->ngaps, &gap, NULL))
        return 0; /* no rhythm to say when the next request comes */
    if (gap <= lead_ns + GS_CC_PRIME_MIN_IDLE_NS)
        return 0; /* too short a gap for the GPU to run anything else in it */
    return p->idle_ns + gap - lead_ns;
}

/* The shortest gap the critical tenants publish of their own rhythm (0:
 * none), and in *longest the longest. */
static uint64_t published_gap(const struct gs_cc_tenant *t, int n, int self, uint64_t *longest)
{
    uint64_t g = 0, l = 0;
    for (int i = 0; i < n; i++) {
        if (i == self || !t[i].critical || !t[i].alive || !t[i].crit_gap_ns)
            continue;
        if (!g || t[i].crit_gap_ns < g)
            g = t[i].crit_gap_ns;
        if (t[i].crit_gap_max_ns > l)
            l = t[i].crit_gap_max_ns;
    }
    if (longest)
        *longest = l > g ? l : g;
    return g;
}

/* Where the critical tenants publish their rhythm (pub, pub_max: their
 * shortest and longest gap, 0: none) and are idle since crit_idle_seen: when
 * their next request is due at now, and in *release when the guard lets go
 * of it; 0 where not known. The next request may come one shortest gap after
 * their work was seen finished, and should have come by the longest; past
 * that they pause, and between bursts with a rhythm of their own the next
 * burst's first request is due one shortest pause after the "finished" stamp
 * (compute.h). */
static uint64_t next_due(const struct gs_cc_self *me, uint64_t pub, uint64_t pub_max, uint64_t now,
                         uint64_t *release)
{
    uint64_t due;
    if (!pub || !me->crit_idle_seen)
        return 0;
    *release = me->crit_idle_seen + pub_max + GS_CC_GUARD_HOLD_NS;
    if (now < *release)
        return me->crit_idle_seen + pub;
    if (!burst_due(me, &due, release) || now >= *release)
        return 0;
    return due;
}

/* The guard's hold at now, with the critical tenants idle since crit_idle_seen
 * (0: none), pub their published shortest gap (0: none) and, where they
 * publish, pub_due and pub_release next_due's: the time to ask again. */
static uint64_t guard_hold(const struct gs_cc_self *me, uint64_t pub, uint64_t pub_due,
                           uint64_t pub_release, uint64_t now)
{
    uint64_t gap, due, longest;
    if (pub) {
        /* The critical tenant's own rhythm: a kernel of ours that cannot end
         * guard_ns before its next request is due waits for the request (or
         * for GS_CC_GUARD_HOLD_NS past the latest: a paused loop), however
         * long our kernels are: with kernels longer than its gaps we run only
         * while it pauses. Protecting its requests comes first
         * (docs/compute.md). The kernel starts once what we queued before
         * it ends, and takes its own GPU time where the caller knows both. */
        uint64_t start = now > me->queue_end_ns ? now : me->queue_end_ns;
        uint64_t len = me->next_ns ? me->next_ns : me->kernel_ns;
        if (!pub_due || start + len + me->guard_ns <= pub_due)
            return 0;
        uint64_t again = now + GS_CC_CRIT_POLL_NS;
        return again < pub_release ? again : pub_release;
    }
    if (me->ngaps < GS_CC_GUARD_GAPS / 2)
        return 0; /* too few gaps seen */
    if (gs_cc_guard_short(me, &longest)) {
        /* Every gap is shorter than the margin: nothing of ours, however short,
         * can end guard_ns before the next request. Hold through the gap,
         * whatever our estimate says (it is not used, so it cannot keep us out
         * for good), until it has lasted GS_CC_GUARD_HOLD_NS longer than the
         * longest of them: then the critical tenant has paused. */
        due = me->crit_idle_seen + longest;
    } else {
        if (!gs_cc_guard_gaps(me, &gap, NULL))
            return 0; /* no rhythm in its gaps to keep B's kernels out of */
        uint64_t need = me->kernel_ns + me->guard_ns;
        if (need >= gap)
            return 0; /* our kernels never fit its gaps: holding on an estimate would starve us */
        due = me->crit_idle_seen + gap;
        if (now + need <= due)
            return 0;
    }
    if (now >= due + GS_CC_GUARD_HOLD_NS)
        return 0;
    uint64_t again = now + GS_CC_CRIT_POLL_NS;
    return again < due + GS_CC_GUARD_HOLD_NS ? again : due + GS_CC_GUARD_HOLD_NS;
}

uint64_t gs_cc_kernel_estimate(uint64_t k, uint64_t d)
{
    return d > k ? d : k - (k - d) / 8;
}

int gs_cc_kernel_sample_clean(uint64_t start, uint64_t crit_launch_ns, uint64_t crit_idle_ns)
{
    if (crit_launch_ns == 0)
        return 1; /* it never launched */
    /* Its last launch before ours, and all of it seen finished by then. A
     * launch after ours shows as a later launch stamp; an "idle" after our
     * start, as work that may have run beside ours. */
    if (crit_launch_ns >= start || crit_idle_ns > start)
        return 0;
    /* Seen finished before ours began, or a launch never seen finished that
     * is no longer believed busy (GS_CC_CRIT_STALE_NS: it may have died
     * mid-kernel, and must not freeze our estimate for good). */
    return crit_idle_ns >= crit_launch_ns || crit_launch_ns + GS_CC_CRIT_STALE_NS <= start;
}

static int active(const struct gs_cc_tenant *t, uint64_t now)
{
    return t->alive && t->share > 0 && !t->critical && t->demand_ns &&
           t->demand_ns + GS_CC_IDLE_NS > now;
}

static int before(const struct gs_cc_tenant *t, int i, int j)
{
    return t[i].key < t[j].key || (t[i].key == t[j].key && i < j);
}

void gs_cc_power_init(struct gs_cc_power *p, unsigned floor_pct)
{
    memset(p, 0, sizeof *p);
    p->floor_pct = floor_pct > 100 ? 100 : floor_pct;
    p->duty = 100;
}

unsigned gs_cc_power_sample(struct gs_cc_power *p, uint64_t now, int limited,
                            unsigned clock_permille)
{
    if (!p->period_end) { /* an active spell begins: from the duty of the last, if recent */
        p->period_end = now + GS_CC_PERIOD_NS;
        if (p->learnt && p->floor_pct && now < p->learnt_at + GS_CC_POWER_MEMORY_NS)
            p->duty = p->learnt;
        p->learnt = 0;
    }
    p->n++;
    p->nlimited += limited != 0;
    p->clock_sum += clock_permille;
    if (now < p->period_end)
        return p->duty;
    /* The period's verdict: limited in most samples, at its mean clock. */
    limited = 2 * p->nlimited > p->n;
    clock_permille = (unsigned)(p->clock_sum / p->n);
    p->n = p->nlimited = 0;
    p->clock_sum = 0;
    p->period_end = now + GS_CC_PERIOD_NS;
    unsigned floor = p->floor_pct * 10;
    if (!p->floor_pct) {
        p->duty = 100;
    } else if (limited && clock_permille < floor) {
        unsigned down = (floor - clock_permille + 9) / 10; /* points below the floor */
        if (down > GS_CC_POWER_DOWN)
            down = GS_CC_POWER_DOWN;
        p->duty = p->duty > GS_CC_POWER_DUTY_MIN + down ? p->duty - down : GS_CC_POWER_DUTY_MIN;
        p->calm = 0;
    } else if (!limited || clock_permille >= floor + GS_CC_POWER_BAND * 10) {
        if (++p->calm >= GS_CC_POWER_CALM) {
            p->duty = p->duty + GS_CC_POWER_UP < 100 ? p->duty + GS_CC_POWER_UP : 100;
            p->calm = 0;
        }
    } else {
        p->calm = 0; /* limited, just above the floor: hold */
    }
    return p->duty;
}

unsigned gs_cc_power_release(struct gs_cc_power *p, uint64_t now)
{
    unsigned learnt = p->learnt;
    uint64_t learnt_at = p->learnt_at;
    if (p->period_end) { /* an active spell ends */
        learnt = p->duty < 100 ? p->duty : 0;
        learnt_at = now;
    }
    gs_cc_power_init(p, p->floor_pct);
    p->learnt = learnt;
    p->learnt_at = learnt_at;
    return p->duty;
}

int gs_cc_duty_applies(const struct gs_cc_tenant *t, int n, int self)
{
    if (t[self].critical || !t[self].duty || t[self].duty >= 100)
        return 0;
    for (int i = 0; i < n; i++)
        if (i != self && t[i].critical && t[i].alive)
            return 1;
    return 0;
}

void gs_cc_decide(const struct gs_cc_tenant *t, int n, int self, uint64_t now, uint64_t period,
                  uint64_t debt, struct gs_cc_decision *out)
{
    const struct gs_cc_tenant *me = &t[self];
    out->gated_by_critical = 0;
    out->critical_busy = 0;
    out->critical_recent = 0;
    out->window_end_ns = 0;
    out->window_start_ns = 0;
    out->window_len_ns = 0;
    if (me->critical) {
        out->go = 1;
        out->until_ns = now + period;
        return;
    }
    for (int i = 0; i < n; i++) {
        out->critical_busy |= i != self && gs_cc_critical_busy(&t[i], now);
        out->critical_recent |= i != self && gs_cc_critical_recent(&t[i], now);
    }
    if (out->critical_busy && !me->bound) {
        out->go = 0;
        out->until_ns = now + GS_CC_CRIT_POLL_NS;
        out->gated_by_critical = 1;
        return;
    }
    /* Until a critical tenant is busy, look again often enough to yield fast. */
    uint64_t crit_horizon = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (i != self && t[i].critical && t[i].alive)
            crit_horizon = now + GS_CC_CRIT_POLL_NS;
    if (me->share == 0) {
        out->go = 1;
        out->until_ns = crit_horizon < now + period ? crit_horizon : now + period;
        return;
    }
    /* Windows over the tenants that want the GPU now (we do: we are asking). */
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        if (i == self || active(&t[i], now))
            sum += t[i].share;
    uint64_t start = now - now % period, off = 0, len = 0;
    for (int i = 0; i < n; i++) {
        if (i != self && !active(&t[i], now))
            continue;
        uint64_t denom = t[i].cap ? (sum > 100 ? sum : 100) : sum;
        uint64_t l = period * t[i].share / denom;
        if (i == self)
            len = l;
        else if (before(t, i, self))
            off += l;
    }
    /* Pay back what earlier windows overran (err: integral of usage - entitlement):
     * a window may shrink to nothing, and then we sit it out. */
    uint64_t eff = len > debt ? len - debt : 0;
    uint64_t ws = start + off, we = ws + eff;
    out->window_start_ns = ws;
    out->window_len_ns = len;
    out->window_end_ns = we;
    if (now >= ws && now < we) {
        out->go = 1;
        out->until_ns = we < crit_horizon ? we : crit_horizon;
        return;
    }
    out->go = 0;
    out->until_ns = now < ws ? ws : ws + period;
}

/* Another tenant still in its window or draining it. One that has not
 * wanted the GPU for GS_CC_IDLE_NS is not believed, whatever its ledger says. */
static int others_in_window(const struct gs_cc_tenant *t, int n, int self, uint64_t now)
{
    for (int i = 0; i < n; i++)
        if (i != self && active(&t[i], now) && t[i].window_busy)
            return 1;
    return 0;
}

/* A decision's end next to the critical tenants, until at most: where they
 * are read at decisions only, GS_CC_CRIT_POLL_NS on; where the caller sees
 * their stamps at each launch (me->crit_watch), up to GS_CC_CRIT_WATCH_NS,
 * bounded by what time changes: the linger's end after their last request,
 * and a quarter of the way to the horizon (the cover narrows towards it;
 * the launch path checks each launch's fit against it). *soft: the end is
 * the watch's alone, and what time changes is GS_CC_LATE_MAX_NS beyond it. */
static uint64_t crit_horizon(const struct gs_cc_self *me, const struct gs_cc_tenant *t, int n,
                             int self, uint64_t now, uint64_t until, int *soft)
{
    int any = 0;
    const uint64_t watch = now + GS_CC_CRIT_WATCH_NS;
    uint64_t end = watch, hard = until; /* hard: the first end that matters */
    *soft = 0;
    for (int i = 0; i < n; i++) {
        if (i == self || !t[i].critical || !t[i].alive)
            continue;
        any = 1;
        if (gs_cc_critical_busy(&t[i], now))
            end = now; /* (a bound tenant, not gated: it looks again soon) */
        else if (gs_cc_critical_recent(&t[i], now) &&
                 t[i].crit_idle_ns + GS_CC_CRIT_LINGER_NS < hard)
            hard = t[i].crit_idle_ns + GS_CC_CRIT_LINGER_NS;
    }
    if (!any)
        return until;
    if (hard < end)
        end = hard;
    /* (The guard on gaps it learnt itself holds by time alone, with no
     * horizon the launch path could check: decisions keep to the poll.) */
    int guard_by_gaps = me->guard_ns && !me->pub_seen && me->ngaps >= GS_CC_GUARD_GAPS / 2;
    if (!me->crit_watch || guard_by_gaps || gs_cc_duty_applies(t, n, self))
        end = now + GS_CC_CRIT_POLL_NS;
    else if (me->horizon_ns > now) {
        uint64_t quarter = now + (me->horizon_ns - now) / GS_CC_QUEUE_COVERS;
        if (quarter < end)
            end = quarter;
        if (quarter < hard)
            hard = quarter;
    }
    if (end < now + GS_CC_CRIT_POLL_NS)
        end = now + GS_CC_CRIT_POLL_NS;
    *soft = end == watch && hard >= watch + GS_CC_LATE_MAX_NS;
    return end < until ? end : until;
}

/* The power guard's duty, as a bucket of GPU time (compute.h): 0 if a kernel
 * of ours may go now (its estimated length is taken from the bucket), else
 * when the bucket will hold one (and me->power_held is set). */
static uint64_t duty_hold(struct gs_cc_self *me, const struct gs_cc_tenant *t, int n, int self,
                          uint64_t now)
{
    me->duty_taken = 0;
    if (!gs_cc_duty_applies(t, n, self)) {
        me->duty_at = 0;
        return 0;
    }
    unsigned duty = t[self].duty;
    uint64_t need = me->kernel_ns ? me->kernel_ns : GS_CC_POWER_KERNEL_NS;
    uint64_t full = need > GS_CC_POWER_BURST_NS ? need : GS_CC_POWER_BURST_NS;
    if (!me->duty_at)
        me->duty_tokens = full;
    else if (now > me->duty_at)
        me->duty_tokens += (now - me->duty_at) * duty / 100;
    if (me->duty_tokens > full)
        me->duty_tokens = full;
    me->duty_at = now;
    if (me->duty_tokens < need) {
        me->power_held = 1;
        return now + (need - me->duty_tokens) * 100 / duty + 1;
    }
    me->duty_tokens -= need;
    me->duty_taken = need;
    return 0;
}

void gs_cc_duty_refund(struct gs_cc_self *me)
{
    me->duty_tokens += me->duty_taken;
    me->duty_taken = 0;
}

/* With the critical tenants' next request due at due: 1 where nothing of
 * ours may be queued behind our running kernel (the room to the horizon is
 * too short, or the request is due already: it may come at any moment), else
 * 0, with me->cover_ns the work one event of ours may cover (compute.h). */
static int queue_to(struct gs_cc_self *me, uint64_t due, uint64_t now)
{
    uint64_t horizon = due > me->guard_ns ? due - me->guard_ns : 0;
    uint64_t least = me->kernel_ns > GS_CC_QUEUE_MIN_NS ? me->kernel_ns : GS_CC_QUEUE_MIN_NS;
    if (horizon < now + me->kernel_ns + least)
        return 1;
    uint64_t cover = (horizon - now - me->kernel_ns) / GS_CC_QUEUE_COVERS;
    me->cover_ns = cover < GS_CC_COVER_MAX_NS ? cover : GS_CC_COVER_MAX_NS;
    return 0;
}

enum gs_cc_action gs_cc_before_launch(struct gs_cc_self *me, const struct gs_cc_tenant *t, int n,
                                      int self, uint64_t now, uint64_t period, uint64_t *wait_until)
{
    struct gs_cc_decision d;
    gs_cc_decide(t, n, self, now, period, me->debt, &d);
    if (d.window_len_ns && me->debt > GS_CC_DEBT_MAX_WINDOWS * d.window_len_ns) {
        /* Debt run up with a long window (alone), paid with a short one (next to
         * others), would keep us out for many more than GS_CC_DEBT_MAX_WINDOWS. */
        me->debt = GS_CC_DEBT_MAX_WINDOWS * d.window_len_ns;
        gs_cc_decide(t, n, self, now, period, me->debt, &d);
    }
    me->until = 0;
    me->until_soft = 0;
    me->critical_recent = d.critical_recent;
    me->guard_held = 0;
    me->power_held = 0;
    uint64_t hold = 0; /* the guard holds gated tenants only (not critical, not bound) */
    uint64_t pub_max = 0, pub = 0;
    me->horizon_ns = 0;
    me->cover_ns = 0;
    if (me->guard_ns && !t[self].critical && !t[self].bound)
        pub = published_gap(t, n, self, &pub_max); /* pub_max 0 where pub is */
    if (pub) {
        me->pub_kept = pub;
        me->pub_kept_max = pub_max;
    } else if (me->held_out_at && now - me->held_out_at < GS_CC_HOLD_MAX_NS && me->pub_kept &&
               me->guard_ns && !t[self].critical && !t[self].bound) {
        pub = me->pub_kept; /* the rhythm our launch let go may have broken (compute.h) */
        pub_max = me->pub_kept_max;
    }
    me->pub_seen = pub;
    me->pub_seen_max = pub_max;
    if (me->guard_ns && !t[self].critical && !t[self].bound &&
        guard_observe(me, t, n, self, d.critical_busy, pub_max) && d.go && !d.gated_by_critical) {
        uint64_t release = 0;
        me->horizon_ns = next_due(me, pub, pub_max, now, &release);
        hold = guard_hold(me, pub, me->horizon_ns, release, now);
        if (hold && pub && !me->held_from) {
            me->held_from = now;
        } else if (hold && pub && now - me->held_from >= GS_CC_HOLD_MAX_NS &&
                   now - me->crit_idle_seen <= GS_CC_GAP_START_NS) {
            hold = 0; /* held long enough: at the start of a gap (compute.h) */
            me->held_out++;
            me->held_out_at = now;
        }
        /* Where the next request is due at a known time, our queue reaches
         * towards it, the linger aside (compute.h). */
        if (me->horizon_ns)
            me->critical_recent = queue_to(me, me->horizon_ns, now);
    }
    if (d.gated_by_critical || !d.window_len_ns) {
        /* Not share-controlled (or a critical tenant is busy): decide said it all. */
        if (d.go && hold) {
            me->guard_held = 1;
            *wait_until = hold;
            return GS_CC_WAIT;
        }
        uint64_t spent = d.go ? duty_hold(me, t, n, self, now) : 0;
        if (spent) {
            *wait_until = spent;
            return GS_CC_WAIT;
        }
        if (d.go) {
            /* (decide's own end next to a critical tenant is the poll's) */
            me->until = crit_horizon(me, t, n, self, now, now + period, &me->until_soft);
            me->held_from = 0;
            return GS_CC_LAUNCH;
        }
        *wait_until = d.until_ns;
        return GS_CC_WAIT;
    }
    uint64_t ws = d.window_start_ns;
    if (me->in_window && now >= me->window_end) {
        /* Our window is over: our queued work must not run into the next
         * tenant's window (what does is paid back from later windows). This
         * comes first: a window that ended at the period's end is closed
         * before the next period's is considered, or it would stay "busy"
         * in our ledger, unaccounted, while we sleep. */
        me->in_window = 0;
        /* Alone (nobody else wants the GPU) and held to no less than the
         * period, our next window begins right here: nothing of ours can
         * run into another tenant's window, and the drain need not wait
         * (gs_cc_step closes it without: a wait would hold every thread of
         * ours until all our streams' queued work has run, once a period). */
        me->next_ours = d.go && d.window_start_ns == me->window_end;
        return GS_CC_DRAIN;
    }
    if (ws != me->window_start) {
        /* A window of ours we have not entered yet. */
        if (!d.go) {
            if (now >= ws && me->debt >= d.window_len_ns) {
                /* One we sit out to pay the debt: it counts as used nothing. */
                me->window_start = ws;
                me->closed_window = ws;
                me->debt -= d.window_len_ns;
            }
            *wait_until = d.until_ns;
            return GS_CC_WAIT;
        }
        /* Hand-over: the tenant before us may still be draining its last work.
         * Starting now would share the GPU with it and blur both tenants'
         * accounting; wait for it, briefly. Our window still ends where it
         * was laid out: our own drain takes as long, at the next tenant's
         * start, as the wait took from ours, so every tenant is charged for
         * the time it had, and the lag does not grow from window to window. */
        if (others_in_window(t, n, self, now) && now - ws < GS_CC_HANDOFF_MAX_NS) {
            *wait_until = now + GS_CC_HANDOFF_POLL_NS;
            return GS_CC_WAIT;
        }
        me->window_start = ws;
        me->window_len = d.window_len_ns;
        /* Our work queued in the window before, closed without a drain, has
         * run from this one's start. */
        me->used_from = me->carry_from == ws ? ws : now;
        me->carry_from = 0;
        me->window_end = d.window_end_ns;
        me->in_window = 1;
    }
    if (ws == me->closed_window) {
        /* We drained this window already; a smaller debt must not reopen it. */
        *wait_until = ws + period;
        return GS_CC_WAIT;
    }
    if (now < me->window_end) {
        if (hold) {
            me->guard_held = 1;
            *wait_until = hold < me->window_end ? hold : me->window_end;
            return GS_CC_WAIT;
        }
        uint64_t spent = duty_hold(me, t, n, self, now);
        if (spent) {
            *wait_until = spent < me->window_end ? spent : me->window_end;
            return GS_CC_WAIT;
        }
        me->until = crit_horizon(me, t, n, self, now, me->window_end, &me->until_soft);
        me->held_from = 0;
        return GS_CC_LAUNCH;
    }
    *wait_until = ws + period;
    return GS_CC_WAIT;
}

uint64_t gs_cc_work_finished(uint64_t drain_start, uint64_t drain_end,
                             const struct gs_cc_seen *seen)
{
    if (seen->all_done && seen->all_done <= drain_end)
        return seen->all_done;
    if (drain_end - drain_start >= GS_CC_DRAIN_WAITED_NS)
        return drain_end;
    uint64_t last = seen->last_sync > seen->last_launch ? seen->last_sync : seen->last_launch;
    return last && last < drain_end ? last : drain_end;
}

void gs_cc_drained(struct gs_cc_self *me, uint64_t now)
{
    /* What this window gave us (from our first launch to the end of our
     * drain) against what it promised; only the excess is carried, since
     * time we did not use was given to others, not owed to us. */
    me->closed_window = me->window_start;
    uint64_t used = now > me->used_from ? now - me->used_from : 0;
    uint64_t promised = me->window_len;
    me->charged_ns += used;
    if (used > promised)
        me->debt += used - promised;
    else
        me->debt = me->debt > promised - used ? me->debt - (promised - used) : 0;
    /* Never starve for long on one bad measurement. */
    if (me->debt > GS_CC_DEBT_MAX_WINDOWS * promised)
        me->debt = GS_CC_DEBT_MAX_WINDOWS * promised;
}

/* A window's end, drained (closed 0) or closed without a drain (1). */
static void window_done(struct gs_cc_self *me, const struct gs_cc_io *io,
                        const struct gs_cc_seen *seen, int closed)
{
    uint64_t end = io->clock(io->ctx);
    uint64_t done = gs_cc_work_finished(me->drain_start, end, seen);
    if (closed && done > me->window_end) {
        /* Our work runs on past the window's end, into our next window,
         * which is charged for it from its start: the closed one ends at its
         * end, and owes nothing (a debt would shorten the next window, whose
         * end would then be drained). */
        done = me->window_end;
        me->carry_from = me->window_end;
    }
    gs_cc_drained(me, done);
    me->pub_busy = 0;
    io->publish(io->ctx, me->pub_demand, me->pub_busy);
    if (io->note)
        io->note(io->ctx, me, GS_CC_DRAIN, end, done);
}

void gs_cc_drain_done(struct gs_cc_self *me, const struct gs_cc_io *io,
                      const struct gs_cc_seen *seen)
{
    window_done(me, io, seen, 0);
}

enum gs_cc_action gs_cc_step(struct gs_cc_self *me, const struct gs_cc_io *io, uint64_t *wait_until)
{
    for (;;) {
        uint64_t now = io->clock(io->ctx);
        me->pub_demand = now; /* read by the others, and by read_peers for us */
        io->publish(io->ctx, me->pub_demand, me->pub_busy);
        struct gs_cc_tenant t[GS_CC_MAX_TENANTS];
        int self = 0;
        int n = io->read_peers(io->ctx, now, t, &self);
        uint64_t wait = 0;
        enum gs_cc_action a = gs_cc_before_launch(me, t, n, self, now, GS_CC_PERIOD_NS, &wait);
        me->pub_busy = me->in_window || a == GS_CC_DRAIN;
        io->publish(io->ctx, me->pub_demand, me->pub_busy);
        if (a == GS_CC_LAUNCH) {
            if (io->note)
                io->note(io->ctx, me, a, now, me->until);
            return a;
        }
        if (a == GS_CC_DRAIN) {
            struct gs_cc_seen seen = {0};
            me->drain_start = io->clock(io->ctx); /* not now: reading the peers lies between */
            if (me->next_ours && io->close && io->close(io->ctx, &seen)) {
                window_done(me, io, &seen, 1);
                continue;
            }
            if (!io->drain(io->ctx, &seen))
                return a;
            gs_cc_drain_done(me, io, &seen);
            continue;
        }
        if (io->note)
            io->note(io->ctx, me, a, now, wait);
        me->pub_demand = wait; /* asleep until our turn, we still want the GPU: say so */
        io->publish(io->ctx, me->pub_demand, me->pub_busy);
        if (!io->sleep(io->ctx, wait)) {
            *wait_until = wait;
            return a;
        }
    }
}
