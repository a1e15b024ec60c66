#include "store/write_back.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace reprise::store {
namespace {

// Records what the write-back thread hands over; its first batch can be held at a gate.
class RecordingSink : public WriteBackSink {
 public:
  struct Step {
    std::vector<kv::ChunkId> written;
    std::vector<kv::ChunkId> first_accessed;  // the first id of each access job
    bool idle = false;
    std::thread::id thread;
  };

  void HoldFirstBatch() { held_ = true; }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = false;
    cv_.notify_all();
  }
  // Waits until the held batch reached the sink.
  void WaitUntilHeld() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return reached_gate_; });
  }
  void DisableOnFirstBatch(WriteBack* write_back) { disable_ = write_back; }

  void PersistBatch(std::span<const WriteJob> batch, std::span<const AccessJob> accesses) override {
    Step step;
    for (const WriteJob& job : batch) step.written.push_back(job.entry->id);
    for (const AccessJob& job : accesses) step.first_accessed.push_back(job.ids.at(0));
    step.thread = std::this_thread::get_id();
    std::unique_lock<std::mutex> lock(mutex_);
    reached_gate_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
    steps_.push_back(std::move(step));
    if (disable_ != nullptr) {
      WriteBack* write_back = disable_;
      disable_ = nullptr;
      lock.unlock();
      write_back->Disable();  // as the store does when the disk is full
    }
  }
  int PerformIdleWork() override {
    std::lock_guard<std::mutex> lock(mutex_);
    Step step;
    step.idle = true;
    step.thread = std::this_thread::get_id();
    steps_.push_back(step);
    return 2;
  }
  std::vector<Step> steps() {
    std::lock_guard<std::mutex> lock(mutex_);
    return steps_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool held_ = false;
  bool reached_gate_ = false;
  WriteBack* disable_ = nullptr;
  std::vector<Step> steps_;
};

WriteJob Job(kv::ChunkId id) {
  auto entry = std::make_shared<kv::ChunkEntry>();
  entry->id = id;
  return WriteJob{"app", std::move(entry)};
}

TEST(WriteBackTest, HandsOverBatchesInOrderWithTheirAccesses) {
  RecordingSink sink;
  sink.HoldFirstBatch();
  WriteBack write_back(&sink, /*batch_size=*/2);
  ASSERT_TRUE(write_back.Enqueue(Job(1)));
  sink.WaitUntilHeld();  // batch {1} is taken; the rest queues behind it
  for (kv::ChunkId id : {2, 3, 4}) ASSERT_TRUE(write_back.Enqueue(Job(id)));
  write_back.EnqueueAccess(AccessJob{"app", {7}});
  write_back.EnqueueAccess(AccessJob{"app", {8}});
  EXPECT_TRUE(sink.steps().empty());
  sink.Release();
  write_back.Flush();
  const auto steps = sink.steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].written, (std::vector<kv::ChunkId>{1}));
  EXPECT_EQ(steps[1].written, (std::vector<kv::ChunkId>{2, 3}));
  EXPECT_EQ(steps[1].first_accessed, (std::vector<kv::ChunkId>{7, 8}));
  EXPECT_EQ(steps[2].written, (std::vector<kv::ChunkId>{4}));
  EXPECT_TRUE(steps[2].first_accessed.empty());
  for (const auto& step : steps) EXPECT_NE(step.thread, std::this_thread::get_id());
}

TEST(WriteBackTest, IdleWorkRunsOnTheWriteBackThreadAfterTheQueuesEmpty) {
  RecordingSink sink;
  sink.HoldFirstBatch();
  WriteBack write_back(&sink, 4);
  ASSERT_TRUE(write_back.Enqueue(Job(1)));
  sink.WaitUntilHeld();
  write_back.RequestIdleWork();
  ASSERT_TRUE(write_back.Enqueue(Job(2)));
  write_back.RequestIdleWork();  // one run for both requests
  sink.Release();
  write_back.Flush();
  const auto steps = sink.steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_FALSE(steps[0].idle);
  EXPECT_FALSE(steps[1].idle);  // chunk 2 is written before the idle work
  EXPECT_EQ(steps[1].written, (std::vector<kv::ChunkId>{2}));
  EXPECT_TRUE(steps[2].idle);
  EXPECT_NE(steps[2].thread, std::this_thread::get_id());
  EXPECT_EQ(write_back.num_idle_loaded(), 2);
}

TEST(WriteBackTest, DisableDropsQueuedJobsAndRefusesNewOnes) {
  RecordingSink sink;
  sink.HoldFirstBatch();
  WriteBack write_back(&sink, 1);
  sink.DisableOnFirstBatch(&write_back);
  ASSERT_TRUE(write_back.Enqueue(Job(1)));
  sink.WaitUntilHeld();
  ASSERT_TRUE(write_back.Enqueue(Job(2)));
  write_back.EnqueueAccess(AccessJob{"app", {7}});
  sink.Release();  // batch {1} fails and disables: 2 and the accesses are dropped
  write_back.Flush();
  EXPECT_FALSE(write_back.Enqueue(Job(3)));
  write_back.RequestIdleWork();  // idle work still runs
  write_back.Flush();
  const auto steps = sink.steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].written, (std::vector<kv::ChunkId>{1}));
  EXPECT_TRUE(steps[1].idle);
}

TEST(WriteBackTest, DestructionFinishesTheQueue) {
  RecordingSink sink;
  {
    WriteBack write_back(&sink, 1);
    for (kv::ChunkId id : {1, 2, 3}) ASSERT_TRUE(write_back.Enqueue(Job(id)));
  }
  const auto steps = sink.steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[2].written, (std::vector<kv::ChunkId>{3}));
}

}  // namespace
}  // namespace reprise::store
