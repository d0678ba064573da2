/* The agent tests' random numbers: xorshift64 from a fixed seed, so a failure
 * replays (each test says which variable changes the seed). */
#ifndef GS_TESTS_AGENT_TESTRNG_H
#define GS_TESTS_AGENT_TESTRNG_H

#include <stdint.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

#endif
