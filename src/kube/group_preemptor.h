#pragma once
// Makes room for pod groups that fit nowhere (group_preemption.h), beside kube-scheduler's own
// preemption, which cannot: it preempts for one pod at a time, on one node, by deleting its victims.
// Every period, while this replica holds the writers' lease (KubeConnection::elect_writer: the one the
// deletion-cost writer holds too, so one replica of several evicts), each group the ledger says wants room
// (GroupBook::groups_wanting_room) is planned over the whole cluster view; the victims of the domain
// chosen are evicted by dry run first (a PodDisruptionBudget that refuses one takes it out of the
// plan, which is made again), the room is held in the ledger, then they are evicted for real, each
// with a Preempted event naming the group. An eviction refused after that gives the room back (the
// group is asked for again), so a group is never placed split.
//
// Thread-safe: start() and stop() from one thread; pass() (tests) from one thread at a time.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "gpu_extender/kube/evictor.h"
#include "gpu_extender/policy/policy_holder.h"
#include "gpu_extender/state/placement_ledger.h"

namespace gpu_extender::kube {

class GroupPreemptor {
 public:
  GroupPreemptor(std::shared_ptr<PlacementLedger> ledger, std::shared_ptr<Evictor> evictor,
                 std::shared_ptr<const PolicyHolder> policies, std::function<bool()> leader,
                 std::chrono::milliseconds period = std::chrono::seconds(1));
  ~GroupPreemptor();
  void start();
  void stop();
  // One look at every group that wants room.
  void pass();

 private:
  void make_room(const GroupBook::RoomWanted& wanted, const Policy& policy);
  bool stopping();
  void run();

  std::shared_ptr<PlacementLedger> ledger_;
  std::shared_ptr<Evictor> evictor_;
  std::shared_ptr<const PolicyHolder> policies_;
  std::function<bool()> leader_;
  std::chrono::milliseconds period_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace gpu_extender::kube
