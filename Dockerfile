# gpu-extender image: built on Debian 12 with the project's own set-up script, run on debian:12-slim
# as a non-root user with the binary and its runtime libraries only.
#   docker build -t REGISTRY/gpu-extender:0.1.0 .
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DGPU_EXTENDER_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" --target gpu-extender \
 && /build/gpu-extender --check-config

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libsimdjson14 libyaml-cpp0.7 libspdlog1.10 libfmt9 libssl3 zlib1g libbrotli1 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/gpu-extender /usr/local/bin/gpu-extender
USER 65532:65532
EXPOSE 8888 9090
ENTRYPOINT ["/usr/local/bin/gpu-extender"]
CMD ["--address=0.0.0.0"]
