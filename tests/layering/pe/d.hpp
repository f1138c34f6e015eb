#pragma once
// Fixture (never compiled): pe may use fabric and core.
#include "fabric/c.hpp"
#include "core/a.hpp"
