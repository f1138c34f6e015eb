#pragma once
// Fixture (never compiled): core may use no other room.
#include "fabric/b.hpp"
#include <vector>
