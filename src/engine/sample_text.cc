#include "engine/sample_text.h"

namespace reprise::engine {

std::string_view SampleText() {
  static constexpr std::string_view kText =
      "Once upon a time, in a small town by the sea, there lived a little girl named Mia. "
      "Mia loved to walk on the beach with her dog, Max. Every morning they looked for "
      "shells in the wet sand. One day Mia found a big blue shell with a tiny crab inside. "
      "The crab was scared and hid in the corner of the shell. Mia said, \"Do not be afraid, "
      "little crab. I will not hurt you.\" She put the shell down near the water, and the crab "
      "ran back into the waves. Max barked and wagged his tail. Mia smiled and said, \"We made "
      "a new friend today.\" When they came home, Mia told her mom about the crab. Her mom was "
      "proud of her and gave her a warm hug. That night Mia dreamed of the sea, the shells and "
      "the little crab waving at her from the waves.\n\n"
      "The next day it rained. Mia could not go to the beach, so she sat by the window and "
      "drew a picture of the crab. She used red for the crab, blue for the sea and yellow for "
      "the sun that was hiding behind the clouds. Her brother Tom came in and asked what she "
      "was drawing. \"It is my friend,\" she said. Tom laughed, but then he sat down and drew "
      "a fish to swim beside the crab. When the rain stopped, they ran outside together and "
      "jumped in every puddle on the way to the park.\n\n"
      "A tide is the regular rise and fall of the sea. It is caused mostly by the pull of the "
      "moon, and to a lesser degree by the sun. Because the earth turns, most coasts see two "
      "high tides and two low tides each day, about twelve hours and twenty-five minutes "
      "apart. When the sun and the moon line up, at new moon and full moon, their pulls add "
      "together and the tides are larger; these are called spring tides. When they pull at "
      "right angles, the tides are smaller, and these are called neap tides. The shape of the "
      "coast matters as well: in a narrow bay the water can rise many metres, while on an "
      "open island it may change by less than one.\n\n"
      "A computer stores numbers in memory and moves them to its processor to work on them. "
      "Reading from memory takes far longer than adding two numbers, so modern processors keep "
      "small, fast caches close to the cores and try to reuse what is already there. A program "
      "that walks through its data in order, and does as much work as it can with each value "
      "before moving on, runs many times faster than one that jumps around. The same idea "
      "explains why a language model answers faster when it can keep the work it did for a "
      "long document and use it again for the next question about that document.\n\n"
      "In the evening the wind came back, and the sky turned orange and pink over the water. "
      "Mia and Tom walked along the shore with Max. The sand was cold under their feet. They "
      "counted the boats coming home: one, two, three, four. The last boat was small and "
      "green, and an old man waved at them from it. \"That is Mr. Brown,\" said Tom. \"He "
      "catches fish for the market.\" Mia waved back. She thought that tomorrow she would ask "
      "Mr. Brown if he had ever seen a blue shell as big as hers.";
  return kText;
}

}  // namespace reprise::engine
