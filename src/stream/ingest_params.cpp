#include "stream/ingest_params.hpp"

#include "noncart/gradient_delay.hpp"
#include "recon/memory_budget.hpp"
#include "wire/endpoint.hpp"

namespace radstream {

void IngestParams::validate() const {
  parse_endpoint(endpoint, "stream.endpoint");
  if (memory_limit != "auto") parse_size(memory_limit, "stream.memory_limit");
  if (memory_limit_total != "auto") parse_size(memory_limit_total, "stream.memory_limit_total");
  if (gradient_delay != "off" && gradient_delay != "auto")
    parse_gradient_delays(gradient_delay, "--gradient-delay");
}

}  // namespace radstream
