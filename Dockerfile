# gpu-extender image: built on Debian 12 with the project's own set-up script, run on debian:12-slim
# as a non-root user with the binary and its runtime libraries only.
#   docker build --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t REGISTRY/gpu-extender:0.1.0 .
# The runtime stage installs, by name, the package of every shared library the binary links
# (tests/image/runtime_libraries_test.sh checks this against `ldd` and runs the binary with only them).
FROM debian:12 AS build
# .dockerignore keeps .git out of the context: the commit comes in as an argument (/version shows it).
ARG GIT_COMMIT=unknown
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DGPU_EXTENDER_BENCH=OFF \
      -DGPU_EXTENDER_GIT_COMMIT=${GIT_COMMIT} \
 && cmake --build /build -j"$(nproc)" --target gpu-extender \
 && /build/gpu-extender --check-config

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libc6 libstdc++6 libgcc-s1 libcpp-httplib0.11 libsimdjson14 libyaml-cpp0.7 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 libssl3 zlib1g libbrotli1 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/gpu-extender /usr/local/bin/gpu-extender
USER 65532:65532
EXPOSE 8888 9090
ENTRYPOINT ["/usr/local/bin/gpu-extender"]
CMD ["--address=0.0.0.0"]
