// Reading the data files: the JSON helpers, and the builders on missing or malformed files.
#include "workload/json_input.h"

#include <gtest/gtest.h>

#include "workload/test_word_count.h"

#include <cctype>

#include "base/file_util.h"
#include "support/temp_dir.h"
#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/named_workload.h"
#include "workload/skills_workload.h"

namespace reprise::workload {
namespace {

using test_util::CountWords;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class JsonFilesTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, std::string_view contents) {
    const std::string path = dir_.path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomically(path, contents).ok());
    return path;
  }
  WorkloadOptions Options() const {
    return {.data_dir = dir_.path(), .chunk_tokens = 64, .count_tokens = CountWords};
  }

  testing_support::TempDir dir_;
};

TEST_F(JsonFilesTest, MissingFileIsNotFoundWithThePath) {
  const std::string path = dir_.path() + "/absent.json";
  Result<nlohmann::json> json = ReadJsonFile(path);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(json.error().message(), path));

  Result<Workload> workload = BuildDocQaWorkload({.common = Options(), .file = "nope.jsonl"});
  ASSERT_FALSE(workload.ok());
  EXPECT_EQ(workload.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(workload.error().message(), dir_.path() + "/nope.jsonl"));
}

TEST_F(JsonFilesTest, InvalidJsonIsCorruptNamingTheFile) {
  const std::string path = Write("bad.json", "{\"a\": [1, 2");
  Result<nlohmann::json> json = ReadJsonFile(path);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.error().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(Contains(json.error().message(), path));

  const std::string lines = Write("bad.jsonl", "{\"a\": 1}\n\n{oops}\n");
  Result<std::vector<nlohmann::json>> values = ReadJsonLinesFile(lines);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(Contains(values.error().message(), "line 3"));

  values = ReadJsonLinesFile(Write("ok.jsonl", "{\"a\": 1}\n  \n[2]"));
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->size(), 2u);
}

TEST_F(JsonFilesTest, FieldAccessorsCheckPresenceAndType) {
  const nlohmann::json object = {{"s", "text"}, {"n", 3}, {"f", 1.5}, {"a", {1}}, {"z", nullptr}};
  EXPECT_EQ(*JsonStringField(object, "s", "obj"), "text");
  EXPECT_EQ(*JsonIntField(object, "n", "obj"), 3);
  EXPECT_TRUE(JsonArrayField(object, "a", "obj").ok());
  Result<std::string> missing = JsonStringField(object, "q", "obj");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(Contains(missing.error().message(), "'q' is missing"));
  Result<int64_t> wrong = JsonIntField(object, "s", "obj");
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(Contains(wrong.error().message(), "should be an integer, is string"));
  EXPECT_FALSE(JsonObjectField(object, "a", "obj").ok());
  EXPECT_FALSE(JsonStringField(nlohmann::json::array(), "s", "obj").ok());

  EXPECT_EQ(*JsonScalarAsString(object, "s", "obj"), "text");
  EXPECT_EQ(*JsonScalarAsString(object, "n", "obj"), "3");
  EXPECT_EQ(*JsonScalarAsString(object, "z", "obj"), "");
  EXPECT_EQ(*JsonScalarAsString(object, "absent", "obj"), "");
  EXPECT_FALSE(JsonScalarAsString(object, "a", "obj").ok());
}

TEST_F(JsonFilesTest, DocQaOnMalformedFilesIsCorrupt) {
  const std::string good = R"({"id": "x1", "question": "Q?", "answer": "A", "paragraphs": )"
                           R"([{"title": "T", "sentences": ["S one.", " S two."]}]})";
  Write("one.jsonl", good + "\n");
  Result<Workload> workload = BuildDocQaWorkload({.common = Options(), .file = "one.jsonl"});
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->requests.size(), 1u);

  struct Case {
    std::string contents;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {good + "\nnot json\n", "line 2 is not valid JSON"},
      {R"({"id": "x1", "answer": "A", "paragraphs": []})", "'question' is missing"},
      {R"({"id": "x1", "question": "Q", "paragraphs": {}})", "'paragraphs' should be an array"},
      {R"({"id": "x1", "question": "Q", "paragraphs": [{"title": "T", "sentences": [1]}]})",
       "a sentence is not a string"},
      {R"({"id": 7, "question": "Q", "paragraphs": []})", "'id' should be a string"},
      {"", "holds no items"},
  };
  for (const Case& c : cases) {
    const std::string path = Write("bad.jsonl", c.contents);
    workload = BuildDocQaWorkload({.common = Options(), .file = path});
    ASSERT_FALSE(workload.ok()) << c.contents;
    EXPECT_EQ(workload.error().code(), StatusCode::kCorrupt) << workload.error().ToString();
    EXPECT_TRUE(Contains(workload.error().message(), c.message_part)) << workload.error().message();
    EXPECT_TRUE(Contains(workload.error().message(), path)) << workload.error().message();
  }
}

TEST_F(JsonFilesTest, ChatOnMalformedFilesIsCorrupt) {
  const std::string conversation =
      R"("conversation": {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "noon",
          "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I like tea."}]})";
  Write("chat.json", R"([{"sample_id": "c1", )" + conversation +
                         R"(, "qa": [{"question": "What does Ann like?", "answer": "tea",
                         "category": 1}, {"question": "Why?", "category": 5}]}])");
  Result<Workload> workload = BuildChatWorkload({.common = Options(), .file = "chat.json"});
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  ASSERT_EQ(workload->requests.size(), 1u);
  EXPECT_EQ(workload->requests[0].segments[1].text, "Session 1 (noon):\nAnn: I like tea.\n");
  EXPECT_EQ(workload->requests[0].reference_answer, "tea");

  struct Case {
    std::string contents;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {R"({"sample_id": "c1"})", "should be an array of samples"},
      {"[]", "holds no samples"},
      {R"([{"sample_id": "c1", "qa": []}])", "'conversation' is missing"},
      {R"([{"sample_id": "c1", "conversation": {"session_1": {}}, "qa": []}])",
       "'session_1' should be an array"},
      {R"([{"sample_id": "c1", "conversation": {"session_1": [{"speaker": "A"}]}, "qa": []}])",
       "turn 0: field 'text' is missing"},
      {R"([{"sample_id": "c1", )" + conversation + R"(, "qa": [{"question": "Q"}]}])",
       "'category' is missing"},
      {"[1, 2", "not valid JSON"},
  };
  for (const Case& c : cases) {
    Write("bad.json", c.contents);
    workload = BuildChatWorkload({.common = Options(), .file = "bad.json"});
    ASSERT_FALSE(workload.ok()) << c.contents;
    EXPECT_EQ(workload.error().code(), StatusCode::kCorrupt) << workload.error().ToString();
    EXPECT_TRUE(Contains(workload.error().message(), c.message_part)) << workload.error().message();
  }
}

TEST_F(JsonFilesTest, SkillsOnMalformedFilesIsCorrupt) {
  const std::string skills = R"("skills": {"k1": {"name": "one", "description": "does one", )"
                             R"("text": "---\nname: one\n---\nBody.\n"}})";
  Write("skills.json",
        "{" + skills +
            R"(, "tasks": [{"task_id": "t1", "instruction": "Do it.", "skills": ["k1"]}]})");
  Result<Workload> workload = BuildSkillsWorkload({.common = Options(), .file = "skills.json"});
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  ASSERT_EQ(workload->requests.size(), 1u);
  EXPECT_EQ(workload->requests[0].segments[0].text, "Available skills:\n- one: does one\n");
  EXPECT_EQ(workload->requests[0].segments[1].text, "Skill: one\n---\nname: one\n---\nBody.\n\n");
  EXPECT_EQ(workload->requests[0].segments[2].text, "Task:\nDo it.");

  struct Case {
    std::string contents;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {R"({"tasks": []})", "'skills' is missing"},
      {"{" + skills + R"(, "tasks": {}})", "'tasks' should be an array"},
      {"{" + skills + R"(, "tasks": [{"task_id": "t1", "instruction": "x", "skills": ["k9"]}]})",
       "skill 'k9' is not in the file's skills"},
      {R"({"skills": {"k1": {"name": "one", "text": 5}}, "tasks": []})",
       "'text' should be a string"},
      {"{" + skills + R"(, "tasks": []})", "holds no tasks"},
  };
  for (const Case& c : cases) {
    Write("bad.json", c.contents);
    workload = BuildSkillsWorkload({.common = Options(), .file = "bad.json"});
    ASSERT_FALSE(workload.ok()) << c.contents;
    EXPECT_EQ(workload.error().code(), StatusCode::kCorrupt) << workload.error().ToString();
    EXPECT_TRUE(Contains(workload.error().message(), c.message_part)) << workload.error().message();
  }
}

TEST_F(JsonFilesTest, BadOptionsAndNamesAreInvalidArgument) {
  WorkloadOptions options = Options();
  options.top_chunks = 0;
  Result<Workload> workload = BuildChatWorkload({.common = options});
  ASSERT_FALSE(workload.ok());
  EXPECT_EQ(workload.error().code(), StatusCode::kInvalidArgument);
  workload = BuildNamedWorkload("poetry", Options());
  ASSERT_FALSE(workload.ok());
  EXPECT_EQ(workload.error().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(workload.error().message(), "docqa-distractor"));
}

}  // namespace
}  // namespace reprise::workload
