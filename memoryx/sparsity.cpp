#include "memoryx/sparsity.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "core/errors.hpp"
#include "core/shown.hpp"
#include "core/splitmix.hpp"

namespace wse {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A position's rank for random choices: a hash of (seed, salt, index), ties broken by index.
uint64_t rank(uint64_t seed, uint64_t salt, size_t i) { return splitmix64(splitmix64(seed ^ salt) ^ i); }

constexpr uint64_t kPruneSalt = 0x70727565ull, kRegrowSalt = 0x72656772ull;

// The first `count` of `candidates` in the method's order: random by hash, topk by magnitude.
void take_first(std::vector<uint32_t>& candidates, size_t count, const float* w, SparsityInit method, uint64_t seed, uint64_t salt) {
  auto less = [&](uint32_t a, uint32_t b) {
    if (method == SparsityInit::TopK) {
      const float ma = std::fabs(w[a]), mb = std::fabs(w[b]);
      return ma != mb ? ma < mb : a < b;
    }
    const uint64_t ra = rank(seed, salt, a), rb = rank(seed, salt, b);
    return ra != rb ? ra < rb : a < b;
  };
  count = std::min(count, candidates.size());
  std::nth_element(candidates.begin(), candidates.begin() + long(count), candidates.end(), less);
  candidates.resize(count);
}

}  // namespace

const char* to_string(SparsityInit m) {
  switch (m) {
    case SparsityInit::Random: return "random";
    case SparsityInit::TopK: return "topk";
    case SparsityInit::FromZeros: return "from_zeros";
  }
  return "?";
}

std::string level_text(double level) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, level);
  return std::string(buf, r.ptr);
}

SparsityInit parse_sparsity_init(const std::string& name, const std::string& field) {
  if (name == "random") return SparsityInit::Random;
  if (name == "topk") return SparsityInit::TopK;
  if (name == "from_zeros") return SparsityInit::FromZeros;
  throw UsageError(field + ": unknown init_method '" + shown(name) + "' (known: random, topk, from_zeros)");
}

bool sparsified_by_default(const ParamInfo& p) {
  if (p.shape.size() <= 1) return false;  // biases and other vectors
  const std::string n = lower(p.name);
  for (const char* word : {"embedding", "norm", "lm_head"})
    if (n.find(word) != std::string::npos) return false;
  return true;
}

uint64_t pruned_count(double level, uint64_t numel) { return uint64_t(std::llround(level * double(numel))); }

SparsityPlan plan_sparsity(const SparsityConfig& cfg, const std::vector<ParamInfo>& params, uint64_t default_seed) {
  SparsityPlan plan;
  if (!cfg.enabled) return plan;
  const uint64_t base_seed = cfg.seed.value_or(default_seed);
  std::vector<bool> used(cfg.patterns ? cfg.patterns->size() : 0, false);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    ParamSparsity ps{i, p.name, 0.0, cfg.method, base_seed + i, ""};
    std::optional<double> level = cfg.level;
    if (cfg.patterns) {
      const SparsityPattern* hit = nullptr;
      for (size_t k = 0; k < cfg.patterns->size() && !hit; ++k)
        if (std::regex_search(p.name, (*cfg.patterns)[k].re)) hit = &(*cfg.patterns)[k], used[k] = true;
      if (!hit) continue;
      ps.pattern = hit->pattern;
      if (hit->level) level = hit->level;
      if (hit->method) ps.method = *hit->method;
      if (hit->seed) ps.seed = *hit->seed + i;
    } else if (!sparsified_by_default(p)) {
      continue;
    }
    if (!level && ps.method != SparsityInit::FromZeros)
      throw UsageError("sparsity: parameter '" + p.name + "' is selected" +
                       (ps.pattern.empty() ? std::string() : " by pattern '" + ps.pattern + "'") +
                       " but has no level: set sparsity.sparsity or the pattern's sparsity");
    ps.level = level.value_or(0.0);
    if (!(ps.level >= 0 && ps.level < 1))
      throw UsageError("sparsity: level " + std::to_string(ps.level) + " for '" + p.name + "' is outside [0, 1)");
    plan.params.push_back(ps);
  }
  for (size_t k = 0; k < used.size(); ++k)
    if (!used[k]) plan.warnings.push_back("sparsity: pattern '" + (*cfg.patterns)[k].pattern + "' matches no parameter");
  return plan;
}

std::vector<uint8_t> sparsity_mask(const float* w, size_t n, const ParamSparsity& p, const std::vector<uint8_t>& prior,
                                   MaskChange* change) {
  std::vector<uint8_t> mask(n, 1);
  const bool has_prior = !prior.empty();
  uint64_t prior_pruned = 0;
  if (has_prior)
    for (size_t i = 0; i < n; ++i) prior_pruned += !prior[i];
  MaskChange c;
  if (p.method == SparsityInit::FromZeros) {
    for (size_t i = 0; i < n; ++i) mask[i] = !(w[i] == 0.0f || (has_prior && !prior[i]));
  } else {
    const uint64_t target = pruned_count(p.level, n);
    std::vector<uint32_t> candidates;
    if (target >= prior_pruned) {
      // Keep the prior pattern and prune the rest from the kept weights.
      for (uint32_t i = 0; i < n; ++i) {
        if (has_prior && !prior[i]) mask[i] = 0;
        else candidates.push_back(i);
      }
      take_first(candidates, target - prior_pruned, w, p.method, p.seed, kPruneSalt);
      for (uint32_t i : candidates) mask[i] = 0;
    } else {
      // Lower level: regrow some prior pruned weights, at random (their values carry no magnitude).
      for (uint32_t i = 0; i < n; ++i) {
        if (!prior[i]) mask[i] = 0, candidates.push_back(i);
      }
      take_first(candidates, prior_pruned - target, w, SparsityInit::Random, p.seed, kRegrowSalt);
      for (uint32_t i : candidates) mask[i] = 1;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    c.pruned += !mask[i];
    if (has_prior) c.newly_pruned += prior[i] && !mask[i], c.regrown += !prior[i] && mask[i];
  }
  if (change) *change = c;
  return mask;
}

}  // namespace wse
