#pragma once
// Names of the built-in rules, as the policy file writes them, and their constructors.
#include <functional>
#include <map>
#include <string>

#include "rules/rules.h"

namespace gpu_extender::rules {

using PredicateFactory = std::function<std::unique_ptr<Predicate>(const PolicyConfig&)>;
using ScorerFactory = std::function<std::unique_ptr<Scorer>(const PolicyConfig&)>;

const std::map<std::string, PredicateFactory>& predicate_registry();
const std::map<std::string, ScorerFactory>& scorer_registry();

// "a, b, c": the registered names, for error messages.
std::string predicate_names();
std::string scorer_names();

}  // namespace gpu_extender::rules
