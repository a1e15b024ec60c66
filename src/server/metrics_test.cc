#include "server/metrics.h"

#include <gtest/gtest.h>

namespace reprise::server {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(MetricsTest, RendersCountersHistogramsAndGauges) {
  Metrics metrics;
  metrics.CountRequest("chat", 200);
  metrics.CountRequest("chat", 200);
  metrics.CountRequest("chat", 400);
  GenerateResult result;
  result.ttft_ms = 300;  // 0.3 s
  result.decode_tokens_per_second = 30;
  result.generated_tokens = {1, 2, 3};
  result.reuse.tokens_prefix = 5;
  result.reuse.tokens_reused = 7;
  result.reuse.tokens_recomputed = 2;
  result.reuse.tokens_new = 11;
  result.reuse.chunks_from_flash = 4;
  metrics.ObserveGeneration(result, 0.002);
  metrics.CountCancelled();
  EngineStats engine;
  engine.sessions = 2;
  engine.sessions_busy = 1;
  engine.chunks = 9;
  engine.bytes_on_disk = 4096;
  engine.decode_batch_calls = 10;
  engine.decode_batch_steps = 35;
  const std::string text = metrics.Render(engine, 3, 1);
  EXPECT_TRUE(Has(text, "reprise_requests_total{endpoint=\"chat\",code=\"200\"} 2"));
  EXPECT_TRUE(Has(text, "reprise_requests_total{endpoint=\"chat\",code=\"400\"} 1"));
  EXPECT_TRUE(Has(text, "reprise_ttft_seconds_bucket{le=\"0.25\"} 0"));
  EXPECT_TRUE(Has(text, "reprise_ttft_seconds_bucket{le=\"0.5\"} 1"));
  EXPECT_TRUE(Has(text, "reprise_ttft_seconds_bucket{le=\"+Inf\"} 1"));
  EXPECT_TRUE(Has(text, "reprise_ttft_seconds_count 1"));
  EXPECT_TRUE(Has(text, "reprise_ttft_seconds_sum 0.29999999999999999"));
  EXPECT_TRUE(Has(text, "reprise_decode_tokens_per_second_bucket{le=\"20\"} 0"));
  EXPECT_TRUE(Has(text, "reprise_decode_tokens_per_second_bucket{le=\"50\"} 1"));
  EXPECT_TRUE(Has(text, "reprise_prompt_tokens_total{kind=\"reused\"} 7"));
  EXPECT_TRUE(Has(text, "reprise_prompt_tokens_total{kind=\"new\"} 11"));
  EXPECT_TRUE(Has(text, "reprise_completion_tokens_total 3"));
  EXPECT_TRUE(Has(text, "reprise_chunk_hits_total{tier=\"flash\"} 4"));
  EXPECT_TRUE(Has(text, "reprise_requests_cancelled_total 1"));
  EXPECT_TRUE(Has(text, "reprise_queue_length 3"));
  EXPECT_TRUE(Has(text, "reprise_sessions_busy 1"));
  EXPECT_TRUE(Has(text, "reprise_store_bytes{tier=\"disk\"} 4096"));
  EXPECT_TRUE(Has(text, "reprise_decode_batch_calls_total 10"));
  EXPECT_TRUE(Has(text, "reprise_decode_batch_steps_total 35"));
  EXPECT_TRUE(Has(text, "# TYPE reprise_ttft_seconds histogram"));
  // The remote tier's counters only with one.
  EXPECT_FALSE(Has(text, "reprise_remote_"));
  engine.remote_server = "redis://127.0.0.1:6379/0";
  engine.remote_hits = 5;
  engine.remote_bad_values = 2;
  engine.remote_bytes_read = 1000;
  const std::string with_remote = metrics.Render(engine, 3, 1);
  EXPECT_TRUE(Has(with_remote, "reprise_remote_lookups_total{result=\"hit\"} 5"));
  EXPECT_TRUE(Has(with_remote, "reprise_remote_lookups_total{result=\"bad_value\"} 2"));
  EXPECT_TRUE(Has(with_remote, "reprise_remote_bytes_total{direction=\"read\"} 1000"));
}

}  // namespace
}  // namespace reprise::server
