// `reprise bench accuracy`: how far the engine's compiled graphs (its packed weights and
// kernels) are from the plain float forward pass of a model file — the cost of repacking
// (Q4_K and Q6_K are held exactly, the other K-quants are requantized to Q8_0 at load,
// packed_matrix.h)
// and of the kernels' arithmetic.
//
// Both run the same tokens of a text (the built-in sample, reprise::SampleText, by default)
// `step` tokens at a time; after each step the next-token distributions are compared: KL in
// nats (the float pass as truth), top-1 agreement. Then each continues the text greedily for
// `continuation_tokens`, and the shared prefix of the two continuations is counted.
// The float pass may run another file of the same architecture (`reference_path`: say the
// F32 original of a quantized file), which then measures the quantization as a whole.
// Built on the public API: two Engines (one with EngineOptions::use_reference) and their
// sessions' token-level Evaluate.
#pragma once

#include <string>

#include "base/status.h"
#include "reprise/engine.h"

namespace reprise::tools {

struct AccuracyBenchOptions {
  std::string model_path;      // run by the engine's compiled graphs
  std::string reference_path;  // run by the float reference forward; empty = model_path
  std::string text;            // empty = SampleText()
  int max_tokens = 256;        // of the text's tokens, at most
  int step = 8;                // tokens per append; one scored position per step
  int continuation_tokens = 32;
  int num_threads = 0;  // of the compiled graphs; 0 = every usable core
  // How the engine packs the weights: a forced format (e.g. Q8_0 for an F32 file, to measure
  // the per-block int8 path) and the int8 scheme (EngineOptions), whose static schemes' activation
  // calibration is read from (or measured into) `calibration_dir`.
  WeightFormat weight_format = WeightFormat::kAsStored;
  Int8Scheme int8_scheme = Int8Scheme::kPerBlock;
  double outlier_fraction = 0.01;
  std::string calibration_dir;
};

struct AccuracyBenchResult {
  std::string model, reference, backend;
  std::string int8_scheme;      // Int8SchemeName
  double outlier_fraction = 0;  // of the shadow scheme
  int tokens = 0;               // of the text, run by both
  int positions = 0;            // scored
  double kl_mean = 0, kl_max = 0, top1_agreement = 0;
  double continuation_agreement = 0;  // shared prefix / continuation_tokens
  // Mean entropy (nats) of the reference's next-token distributions: a KL is small or large
  // only against how certain the model is (random weights give flat distributions).
  double reference_entropy_mean = 0;

  std::string ToJson() const;
  std::string ToText() const;
};

// Errors: those of loading either model; InvalidArgument for bad options, for a reference of
// another vocabulary size, or a text of fewer than two tokens.
Result<AccuracyBenchResult> RunAccuracyBench(const AccuracyBenchOptions& options);

}  // namespace reprise::tools
