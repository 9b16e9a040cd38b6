"""GPU sharing by memory (gpushare's resources, the gpu-share example's configuration), on the real control
plane: the extender binds each pod to one GPU index of a node and never fills a GPU past its memory."""
import time

from objects import ensure_namespace, expect_pending, make_node, node_of, pod, wait_pod_bound


def gpu_sharing(env):
    """Pods sharing GPUs by memory (gpushare's resources): each gets one GPU index, no GPU over its 16 GiB, a pod
    asking more than one GPU has stays Pending."""
    ns = "share"
    ensure_namespace(env.api, ns)
    for name in ("share-a", "share-b"):
        make_node(env.api, name, {"gpushare": "true"}, {"aliyun.com/gpu-mem": "64", "aliyun.com/gpu-count": "4"})
    env.deploy("gpu-share")
    started = time.monotonic()
    asks = [4, 8, 4, 12, 12, 6]
    for i, gib in enumerate(asks):
        env.api.create(pod(ns, f"infer-{i}", {"aliyun.com/gpu-mem": str(gib)}))
        wait_pod_bound(env.api, ns, f"infer-{i}")
    on_gpu = {}
    for p in env.api.pods(ns):
        index = p["metadata"]["annotations"].get("ALIYUN_COM_GPU_MEM_IDX")
        assert index is not None, f"{p['metadata']['name']} bound without a GPU index"
        key = (node_of(p), index)
        on_gpu[key] = on_gpu.get(key, 0) + int(p["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"])
    assert all(v <= 16 for v in on_gpu.values()), f"a GPU holds more than 16 GiB: {on_gpu}"
    # Binpack: 4 + 8 + 4 fill one GPU before another is started.
    assert 16 in on_gpu.values(), f"the first three pods did not fill one GPU: {on_gpu}"
    expect_pending(env, ns, "too-big", {"aliyun.com/gpu-mem": "20"}, {}, "20")
    return {"pods placed": len(asks), "seconds": time.monotonic() - started}


SCENARIOS = [gpu_sharing]
