#include "gpu_extender/workspace.h"

namespace gpu_extender {

WorkspacePool::WorkspacePool(size_t max_idle) : state_(std::make_shared<State>()) { state_->max_idle = max_idle; }

std::shared_ptr<Workspace> WorkspacePool::acquire() {
  std::unique_ptr<Workspace> workspace;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->idle.empty()) {
      workspace = std::move(state_->idle.back());
      state_->idle.pop_back();
    }
  }
  if (!workspace) workspace = std::make_unique<Workspace>();
  workspace->body.clear();
  workspace->answer.clear();
  // The deleter holds the pool's state, so a lease may outlive the pool object itself.
  return std::shared_ptr<Workspace>(workspace.release(), [state = state_](Workspace* w) {
    std::unique_ptr<Workspace> owned(w);
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->idle.size() < state->max_idle) state->idle.push_back(std::move(owned));
  });
}

size_t WorkspacePool::idle() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->idle.size();
}

}  // namespace gpu_extender
