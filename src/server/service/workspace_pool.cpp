#include "server/service/workspace.h"

#include <malloc.h>

namespace gpu_extender {
namespace {
// Buffers up to this size stay with an idle workspace (a 1,000-node full-mode body is about 11 MB).
constexpr size_t kKeepBufferBytes = 16UL << 20;
// A parser index used up to this much stays too (a realistic 5,000-node body uses ~30 MB of it).
constexpr size_t kKeepParserIndexBytes = 64UL << 20;
}  // namespace

WorkspacePool::WorkspacePool(size_t max_idle) : state_(std::make_shared<State>()) { state_->max_idle = max_idle; }

std::shared_ptr<Workspace> WorkspacePool::acquire() {
  std::unique_ptr<Workspace> workspace;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->idle.empty()) {
      workspace = std::move(state_->idle.back());
      state_->idle.pop_back();
      if (workspace->body.capacity() > kKeepBufferBytes || workspace->answer.capacity() > kKeepBufferBytes)
        state_->large_idle = false;
    }
  }
  if (!workspace) workspace = std::make_unique<Workspace>();
  workspace->body.clear();
  workspace->answer.clear();
  // The deleter holds the pool's state, so a lease may outlive the pool object itself.
  return std::shared_ptr<Workspace>(workspace.release(), [state = state_](Workspace* w) {
    std::unique_ptr<Workspace> owned(w);
    // Large buffers: one idle workspace keeps its body and answer (a 5,000-node full-mode cluster
    // sends 54 MB for every pod, and a warm buffer saves its page faults); any other gives its memory
    // back. A parser index used densely (up to four times the body) goes in any case: kept, the
    // memory held would depend on how dense the last large body was.
    const bool trimmed = owned->decoder.release_buffers_above(kKeepParserIndexBytes);
    const bool large = owned->body.capacity() > kKeepBufferBytes || owned->answer.capacity() > kKeepBufferBytes;
    bool kept = false;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->idle.size() < state->max_idle && (!large || !state->large_idle)) {
        state->large_idle |= large;
        state->idle.push_back(std::move(owned));
        kept = true;
      }
    }
    owned.reset();  // not kept: its buffers go now
    // Outside the lock: malloc_trim walks the heap, and the next request must not wait on it.
    if (trimmed || (large && !kept)) malloc_trim(0);
  });
}

size_t WorkspacePool::idle() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->idle.size();
}

}  // namespace gpu_extender
