/* Reprise from C (reprise/reprise.h): create an engine, stream a completion of a prompt made
 * of two segments, run it again and see the first run's KV reused as a prefix, cancel a
 * request, and handle errors with their messages. C11, no C++ needed on the caller's side.
 *
 * Usage: generate MODEL.gguf   (e.g. data/demo/stories260K.gguf of the repository)
 * Build: examples/README.md. */
#include <stdio.h>
#include <stdlib.h>

#include "reprise/reprise.h"

/* Prints a failed call's status and message, and frees the message. */
static void print_error(const char* what, reprise_status status, char* error) {
  fprintf(stderr, "generate: %s (%s): %s\n", what, reprise_status_name(status),
          error != NULL ? error : "no message");
  reprise_string_free(error);
}

/* Streams the generated text to stdout as it comes; returning nonzero goes on. */
static int print_text(const char* text, size_t length, void* user_data) {
  (void)user_data;
  fwrite(text, 1, length, stdout);
  fflush(stdout);
  return 1;
}

/* Cancels its request after `after` pieces of text. reprise_cancel may be called from any
 * thread (a UI's "stop" button); from the callback keeps the example single-threaded. */
typedef struct cancel_after {
  reprise_cancel_token* token;
  int pieces;
  int after;
} cancel_after;

static int cancel_after_pieces(const char* text, size_t length, void* user_data) {
  cancel_after* state = (cancel_after*)user_data;
  (void)text;
  (void)length;
  if (++state->pieces == state->after) reprise_cancel(state->token);
  return 1;
}

static void print_reuse(int run, const reprise_result* result) {
  const reprise_reuse_report* reuse = &result->reuse;
  printf(
      "[run %d] %d prompt tokens: %d prefix, %d reused, %d recomputed, %d new; "
      "TTFT %.2f ms; %d tokens generated (%s)\n",
      run, result->prompt_tokens, reuse->tokens_prefix, reuse->tokens_reused,
      reuse->tokens_recomputed, reuse->tokens_new, result->ttft_ms, result->generated_tokens,
      result->stop_reason);
}

/* Runs the request twice (the second finds the first's KV) and a cancelled one. */
static int run_requests(reprise_engine* engine) {
  const reprise_segment segments[] = {
      {"document",
       "Lily went to the park with her mom. They saw a big red ball under a tree. Lily wanted "
       "to play with it, but the ball belonged to a boy named Tom."},
      {"question", "One day,"},
  };
  reprise_request request;
  reprise_request_init(&request);
  request.segments = segments;
  request.num_segments = sizeof segments / sizeof segments[0];
  request.max_new_tokens = 24;

  reprise_result result;
  char* error = NULL;
  for (int run = 1; run <= 2; ++run) {
    printf("[run %d] ", run);
    reprise_status status = reprise_generate(engine, &request, print_text, NULL, &result, &error);
    printf("\n");
    if (status != REPRISE_OK) {
      print_error("generate", status, error);
      return 1;
    }
    print_reuse(run, &result);
    reprise_result_free(&result);
  }

  /* Cancellation: the request stops after its third piece of text and returns what it
   * generated so far. */
  reprise_cancel_token* token = reprise_cancel_token_create();
  if (token == NULL) {
    fprintf(stderr, "generate: out of memory\n");
    return 1;
  }
  cancel_after state = {token, 0, 3};
  request.cancel = token;
  request.max_new_tokens = 200;
  reprise_status status =
      reprise_generate(engine, &request, cancel_after_pieces, &state, &result, &error);
  if (status != REPRISE_OK) {
    print_error("generate (to cancel)", status, error);
    reprise_cancel_token_destroy(token);
    return 1;
  }
  printf("[cancel] stopped after %d of at most %d tokens: %s\n", result.generated_tokens,
         request.max_new_tokens, result.stop_reason);
  reprise_result_free(&result);
  /* A token stays cancelled until reset: the next request with it does not start. */
  status = reprise_generate(engine, &request, NULL, NULL, &result, &error);
  printf("[cancel] with the token still cancelled: %s\n", reprise_status_name(status));
  if (status == REPRISE_OK) {
    reprise_result_free(&result);
  } else {
    reprise_string_free(error);
  }
  reprise_cancel_token_destroy(token);
  return status == REPRISE_CANCELLED ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  printf("Reprise %s\n", reprise_version());

  /* Errors come as a status code plus a message. */
  reprise_engine_options options;
  reprise_engine_options_init(&options);
  options.model_path = "/no/such/model.gguf";
  reprise_engine* engine = NULL;
  char* error = NULL;
  reprise_status status = reprise_engine_create(&options, &engine, &error);
  printf("[error] a missing model (%s): %s\n", reprise_status_name(status),
         error != NULL ? error : "no message");
  reprise_string_free(error);
  error = NULL;
  reprise_engine_destroy(engine); /* NULL after a failure; harmless */
  engine = NULL;

  options.model_path = argv[1];
  options.context_tokens = 512;
  options.cache_mb = 64;
  status = reprise_engine_create(&options, &engine, &error);
  if (status != REPRISE_OK) {
    print_error("cannot create the engine", status, error);
    return 1;
  }
  printf("%s\n", reprise_engine_describe(engine));
  int exit_code = run_requests(engine);
  reprise_engine_destroy(engine);
  return exit_code;
}
