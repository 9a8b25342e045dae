// SPDX-License-Identifier: LGPL-2.1 OR GPL-2.0
/*
 * libtaskstate: stuck-worker detection over the mapping (see
 * libtaskstate.h).  A supervisor calls it from its loop; each thread costs
 * one located read by the protocol of <linux/taskstate.h> (two loads of
 * the generation, one of the word), and the whole call one clock read.
 */
#include <errno.h>

#include "libtaskstate.h"

int taskstate_stuck_check(const struct taskstate_mapping *m,
			  const struct taskstate_location *l, uint32_t n,
			  uint64_t threshold_ns, unsigned int state_mask,
			  struct taskstate_stuck *out, uint32_t max_out,
			  uint32_t *nr_gone)
{
	uint32_t i, gone = 0;
	uint64_t now, word, age;
	unsigned int state;
	int stuck = 0;

	if (!m || !m->entries || (n && !l) || (max_out && !out) ||
	    n > INT32_MAX)
		return -EINVAL;
	if (!state_mask)
		state_mask = TASKSTATE_STUCK_MASK;
	/*
	 * One clock read for the whole set.  A word written after it (a
	 * thread that changed state during the scan) is at most a scan
	 * younger than now; taskstate_age_ns() gives such a word age 0,
	 * never a huge one, so it cannot be reported.
	 */
	now = taskstate_now_ns();
	for (i = 0; i < n; i++) {
		if (taskstate_mapping_read(m, &l[i], &word, NULL)) {
			gone++;
			continue;
		}
		state = taskstate_state(word);
		if (!(state_mask & (1U << state)))
			continue;
		age = taskstate_age_ns(word, now);
		if (age <= threshold_ns)
			continue;
		if ((uint32_t)stuck < max_out) {
			out[stuck].which = i;
			out[stuck].state = state;
			out[stuck].age_ns = age;
		}
		stuck++;
	}
	if (nr_gone)
		*nr_gone = gone;
	return stuck;
}
