#pragma once
// cpp-httplib clients for the API server that write a request in one piece and read its answer from a
// buffer.
//
// Why: cpp-httplib's client writes a request's headers and its body with two writes (over TLS, two
// records, two sends; on loopback each send also runs the receiver's TCP path in the sender's time)
// and reads the status line and headers a byte at a time (one SSL_read per byte). For a bind, the
// extender's most frequent call, that was most of its cost. These clients hand cpp-httplib a stream
// that holds what is written until the answer is first read (one record, one send), and reads what
// the socket has into a buffer that the byte-at-a-time reads are served from.
//
// A stream lives for one request and its answer (cpp-httplib makes one per call on a kept-alive
// connection): a server does not send past its answer without being asked, so nothing read ahead is
// lost between calls.
#include <httplib.h>

#include <memory>
#include <string>

namespace gpu_extender::kube {

// Plain HTTP to host:port.
std::unique_ptr<httplib::ClientImpl> make_buffered_client(const std::string& host, int port);

// TLS; client_cert and client_key may be null (no client certificate). The SSL context takes its own
// references to them.
std::unique_ptr<httplib::SSLClient> make_buffered_tls_client(const std::string& host, int port, X509* client_cert,
                                                             EVP_PKEY* client_key);

}  // namespace gpu_extender::kube
