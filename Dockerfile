# The image `bakeoff kubernetes` runs its shards in: Debian 12 and the
# release binary, with bakeoff as the entry point (the Job gives `run …`).
#
#   cargo build --release
#   docker build -t registry.example/bakeoff:0.1.0 . && docker push registry.example/bakeoff:0.1.0
#
# On a machine that reaches no registry (no base image can be pulled),
# scripts/image.sh assembles the same image from scratch with buildah.
FROM debian:12-slim
COPY target/release/bakeoff /usr/local/bin/bakeoff
ENTRYPOINT ["/usr/local/bin/bakeoff"]
