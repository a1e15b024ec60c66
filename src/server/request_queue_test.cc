#include "server/request_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace reprise::server {
namespace {

TEST(RequestQueueTest, AdmitsUpToMaxRunningThenQueuesThenRefuses) {
  RequestQueue queue(1, 1);
  Result<RequestQueue::Admission> first = queue.Admit();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(queue.running(), 1);
  std::thread waiter([&] {
    Result<RequestQueue::Admission> second = queue.Admit();
    EXPECT_TRUE(second.ok());
  });
  while (queue.waiting() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Result<RequestQueue::Admission> third = queue.Admit();
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), StatusCode::kResourceExhausted);
  { RequestQueue::Admission release = std::move(*first); }
  waiter.join();
  EXPECT_EQ(queue.running(), 0);
  EXPECT_EQ(queue.waiting(), 0);
}

TEST(RequestQueueTest, ServesInArrivalOrder) {
  RequestQueue queue(1, 8);
  Result<RequestQueue::Admission> holder = queue.Admit();
  ASSERT_TRUE(holder.ok());
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      Result<RequestQueue::Admission> a = queue.Admit();
      ASSERT_TRUE(a.ok());
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(i);
    });
    // The next thread arrives only once this one waits.
    while (queue.waiting() != i + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  { RequestQueue::Admission release = std::move(*holder); }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(RequestQueueTest, CancelAndCloseEndTheWait) {
  RequestQueue queue(1, 4);
  Result<RequestQueue::Admission> holder = queue.Admit();
  ASSERT_TRUE(holder.ok());
  std::atomic<bool> cancel{false};
  std::thread cancelled([&] {
    Result<RequestQueue::Admission> a = queue.Admit(&cancel);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().code(), StatusCode::kCancelled);
  });
  while (queue.waiting() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cancel.store(true);
  cancelled.join();
  EXPECT_EQ(queue.waiting(), 0);
  std::thread closed([&] {
    Result<RequestQueue::Admission> a = queue.Admit();
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().code(), StatusCode::kUnavailable);
  });
  while (queue.waiting() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  queue.Close();
  closed.join();
  EXPECT_EQ(queue.Admit().error().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace reprise::server
