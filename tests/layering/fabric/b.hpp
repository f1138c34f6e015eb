#pragma once
// Fixture (never compiled): fabric may use core; host/ is not a room of this tree.
#include "core/a.hpp"
#include "host/not_a_room.hpp"
#include "b_local.hpp"
