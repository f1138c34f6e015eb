#pragma once
// Fixture (never compiled): fabric may not use pe, however it is spelled.
#include "fabric/b.hpp"
#include <pe/d.hpp>
  #  include "../pe/d.hpp"  // a comment; with a semicolon
