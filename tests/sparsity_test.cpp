#include <gtest/gtest.h>
TEST(Sparsity, Placeholder) { SUCCEED(); }
