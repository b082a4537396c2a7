// The clock of the wire timestamps and of every latency: CLOCK_MONOTONIC in nanoseconds.
#pragma once
#include <cstdint>

namespace radstream {

std::int64_t monotonic_ns();
void sleep_until_ns(std::int64_t t);  // until monotonic_ns() >= t (resumes after signals)

}  // namespace radstream
