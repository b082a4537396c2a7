#include <gtest/gtest.h>
#include "core/trajectory.hpp"
TEST(Trajectory, Placeholder) { EXPECT_TRUE(true); }
