// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/report/report.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "ddpscope/ddp/rules.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::report {

using nlohmann::json;

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

namespace {

const char* dir_name(int d) {
  return d == 0 ? "client-to-server" : d == 1 ? "server-to-client" : "";
}

// The direction a finding is about, as its endpoints: "10.0.0.2:7174 → 10.0.0.1:40001".
const DirectionModel* direction_of(const Model& m, const Finding& f) {
  if (f.stream >= m.streams.size() || f.direction < 0 || f.direction > 1) return nullptr;
  return &m.streams[f.stream].dirs[f.direction];
}

std::string stag_hex(std::uint32_t stag) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(8) << std::setfill('0') << stag;
  return s.str();
}

json mpa_frame_json(const wire::MpaReqRep& f, std::uint64_t frame) {
  json j;
  j["frame"] = frame;
  j["revision"] = f.revision;
  j["markers"] = f.markers;
  j["crc"] = f.crc;
  j["reject"] = f.reject;
  j["enhanced"] = f.enhanced;
  j["reserved_bits"] = f.reserved;
  j["private_data_length"] = f.private_data.size();
  if (f.enhanced_pd) {
    const auto& e = *f.enhanced_pd;
    j["ird"] = e.ird;
    j["ord"] = e.ord;
    j["peer_to_peer"] = e.peer_to_peer;
    j["rtr"] = {{"send", e.zero_length_send_rtr},
                {"write", e.zero_length_write_rtr},
                {"read", e.zero_length_read_rtr}};
  }
  return j;
}

json terminate_json(const TerminateError& t) {
  return {
      {"layer", t.layer}, {"etype", t.etype}, {"code", t.code}, {"name", terminate_error_name(t)}};
}

// The remote rights an upper layer's command implies, by their regions-file names.
json access_names(std::uint8_t a) {
  json j = json::array();
  if (a & ddp::access::remote_read) j.push_back("remote_read");
  if (a & ddp::access::remote_write) j.push_back("remote_write");
  return j;
}

json region_json(const ShadowBuffer& b) {
  json j;
  j["stag"] = stag_hex(b.key.stag);
  j["sink"] = b.key.owner.to_string();
  j["source"] = std::string(to_string(b.source));
  if (!b.origin.empty()) j["origin"] = b.origin;
  if (b.base) j["base"] = hex(*b.base);
  if (b.length) j["length"] = *b.length;
  j["bounds_enforced"] = b.bounds_enforced;
  if (b.stream) j["stream"] = *b.stream;
  if (b.invalidated) j["invalidated_frame"] = b.invalidated_frame;
  if (!b.ulp.empty()) j["ulp"] = b.ulp;
  if (!b.command.empty()) j["command"] = b.command;
  if (b.ulp_access) j["ulp_access"] = access_names(*b.ulp_access);
  if (b.completed_frame) j["completed_frame"] = b.completed_frame;
  json ranges = json::array();
  for (const auto& [begin, end] : b.extents())
    ranges.push_back({hex(begin), hex(end)});
  j["ranges"] = ranges;
  j["bytes_placed"] = b.bytes_placed();
  j["segments"] = b.segments();
  j["violations"] = b.violations();
  j["overlaps"] = b.overlaps();
  // Placing again (ddp/shadow.h): reuse after delivery is normal, a conflict is a finding.
  j["overwrites"] = b.overwrites();
  j["reused_octets"] = b.reused_octets();
  j["conflicts"] = b.conflicts();
  return j;
}

std::string spi_hex(std::uint32_t spi) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", spi);
  return b;
}

// Per stream, when ESP was analysed: protected or not, mode, the SPI of each direction, the
// algorithms (of the client's direction; the server's when it differs).
json ipsec_json(const StreamModel& s) {
  const auto& c = s.dirs[0].esp;
  const auto& r = s.dirs[1].esp;
  json j;
  j["protected"] = c.has_value() && r.has_value();
  if (!c && !r) return j;
  const EspProtection& any = c ? *c : *r;
  j["mode"] = any.mode;
  j["spi"] = {{"client_to_server", c ? json(spi_hex(c->spi)) : json(nullptr)},
              {"server_to_client", r ? json(spi_hex(r->spi)) : json(nullptr)}};
  j["encryption"] = any.encryption;
  j["integrity"] = any.integrity;
  j["esn"] = any.esn;
  j["udp_encap"] = any.udp_encap;
  j["frames"] = (c ? c->frames : 0) + (r ? r->frames : 0);
  if (c && r && (c->encryption != r->encryption || c->integrity != r->integrity))
    j["server_to_client"] = {{"encryption", r->encryption}, {"integrity", r->integrity}};
  return j;
}

json stream_json(const StreamModel& s, json stags, bool esp_analysed) {
  json js;
  js["id"] = s.id;
  js["client"] = s.client.to_string();
  js["server"] = s.server.to_string();
  js["state"] = std::string(to_string(s.state));
  if (!s.ulp.empty()) js["ulp"] = {{"name", s.ulp}, {"detail", s.ulp_detail}};
  js["first_frame"] = s.first_frame;
  js["last_frame"] = s.last_frame;
  js["llp"] = std::string(to_string(s.llp));
  if (s.llp == Llp::sctp && s.sctp) {
    // The SCTP stream this DDP stream is (RFC 5043 §4) and its session control frames, where an
    // MPA stream carries "mpa".
    const SctpStreamInfo& x = *s.sctp;
    json sctp;
    sctp["stream_id"] = x.stream_id;
    sctp["adaptation"] = x.adaptation;
    sctp["ports"] = {x.ports[0], x.ports[1]};
    sctp["vtags"] = {hex_word(x.vtags[0]), hex_word(x.vtags[1])};
    sctp["over_udp"] = x.over_udp;
    sctp["mid_stream"] = s.mid_stream;
    sctp["enhanced"] = s.enhanced;
    sctp["peer_to_peer"] = s.peer_to_peer;
    if (!s.rtr.empty()) sctp["rtr"] = s.rtr;
    json session = json::array();
    for (const SctpSessionRecord& r : x.session) {
      json jr;
      jr["frame"] = r.frame;
      jr["direction"] = dir_name(r.direction);
      jr["function_code"] = r.message.function_code;
      const std::string_view name = wire::ddp_session_function_name(r.message.function_code);
      jr["function"] = name.empty() ? std::string("unknown") : std::string(name);
      jr["private_data_length"] = r.message.private_data.size();
      if (r.message.enhanced_pd) {
        jr["ird"] = r.message.enhanced_pd->ird;
        jr["ord"] = r.message.enhanced_pd->ord;
      }
      session.push_back(jr);
    }
    sctp["session"] = session;
    js["sctp"] = sctp;
  } else {
    json mpa;
    mpa["mid_stream"] = s.mid_stream;
    if (s.revision) mpa["revision"] = *s.revision;
    mpa["crc"] = s.dirs[0].mpa.crc || s.dirs[1].mpa.crc;
    mpa["enhanced"] = s.enhanced;
    mpa["peer_to_peer"] = s.peer_to_peer;
    if (!s.rtr.empty()) mpa["rtr"] = s.rtr;
    if (s.dirs[0].mpa_frame)
      mpa["request"] = mpa_frame_json(*s.dirs[0].mpa_frame, s.dirs[0].mpa_frame_number);
    if (s.dirs[1].mpa_frame)
      mpa["reply"] = mpa_frame_json(*s.dirs[1].mpa_frame, s.dirs[1].mpa_frame_number);
    js["mpa"] = mpa;
  }
  json dirs = json::array();
  for (int d = 0; d < 2; ++d) {
    const auto& dm = s.dirs[d];
    json jd;
    jd["direction"] = dir_name(d);
    jd["from"] = dm.from.to_string();
    jd["to"] = dm.to.to_string();
    if (s.llp == Llp::sctp) {
      jd["sctp_chunks"] = dm.sctp_chunks;
      jd["sctp_messages"] = dm.sctp_messages;
    } else {
      jd["markers"] = dm.mpa.markers;
      if (dm.mpa.convention)
        jd["marker_convention"] = std::string(wire::to_string(*dm.mpa.convention));
      if (dm.mss) jd["mss"] = *dm.mss;
      jd["tcp_bytes"] = dm.tcp_bytes;
      jd["fpdus"] = dm.fpdus;
      jd["crc_errors"] = dm.crc_errors;
      jd["bytes_lost"] = dm.bytes_lost;
      jd["bytes_unframed"] = dm.bytes_unframed;
    }
    jd["bytes_placed"] = dm.bytes_placed;
    json ops = json::object();
    for (std::size_t op = 0; op < dm.opcodes.size(); ++op) {
      const auto& c = dm.opcodes[op];
      if (c.segments == 0) continue;
      ops[std::string(wire::opcode_info(static_cast<std::uint8_t>(op)).key)] = {
          {"segments", c.segments}, {"messages", c.messages}, {"bytes", c.bytes}};
    }
    jd["opcodes"] = ops;
    json queues = json::array();
    for (const auto& [qn, q] : dm.queues) {
      queues.push_back({{"qn", qn},
                        {"first_msn", q.first_msn},
                        {"last_msn", q.last_msn},
                        {"messages", q.messages},
                        {"segments", q.segments}});
    }
    jd["queues"] = queues;
    dirs.push_back(jd);
  }
  js["directions"] = dirs;
  js["stags"] = std::move(stags);
  if (esp_analysed) js["ipsec"] = ipsec_json(s);
  return js;
}

json finding_json(const Model& m, const Finding& f) {
  json jf;
  jf["code"] = std::string(f.code());
  jf["severity"] = std::string(to_string(f.severity));
  jf["frame"] = f.frame;
  jf["frames"] = f.frames;
  if (f.stream != UINT32_MAX) jf["stream"] = f.stream;
  if (f.direction >= 0) jf["direction"] = dir_name(f.direction);
  if (const DirectionModel* dm = direction_of(m, f)) {
    jf["from"] = dm->from.to_string();
    jf["to"] = dm->to.to_string();
  }
  jf["message"] = f.message;
  if (f.terminate) jf["terminate"] = terminate_json(*f.terminate);
  // With a profile named (--sink-profile): what that Data Sink does, RFC's triple where it
  // differs, and which profiles a peer's Terminate matches.
  // Without one, only an outcome that is no Terminate (an MPA Reply that rejects) is named.
  if (f.outcome && (m.sink_profile || *f.outcome != SinkOutcome::terminate)) {
    jf["sink_outcome"] = std::string(to_string(*f.outcome));
    if (!f.terminate) jf["terminate"] = nullptr;
    if (f.rfc_terminate) jf["rfc_terminate"] = terminate_json(*f.rfc_terminate);
  }
  if (m.sink_profile && f.matches) {
    json names = json::array();
    for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw})
      if (*f.matches & (1u << static_cast<unsigned>(p))) names.push_back(std::string(to_string(p)));
    jf["matches"] = std::move(names);
  }
  // SCTP rules: RFC 5043 has no Terminate codes; what the sink does instead (§11.3).
  if (const LlpAction a = finding_spec(f.id).llp_action; a != LlpAction::none)
    jf["llp_action"] = std::string(to_string(a));
  if (f.consequence()) jf["consequence_of"] = std::string(to_string(f.consequence_of));
  // Kept for scripts written before consequence_of: true for capture loss only.
  if (f.consequence_of == Consequence::gap) jf["consequence_of_gap"] = true;
  return jf;
}

json summary_json(const Model& m) {
  json summary;
  // Every finding counts, the ones past --limit max_findings too.
  summary["errors"] = m.severity_counts[static_cast<std::size_t>(Severity::error)];
  summary["warnings"] = m.severity_counts[static_cast<std::size_t>(Severity::warning)];
  summary["notes"] = m.severity_counts[static_cast<std::size_t>(Severity::note)];
  summary["messages"] = m.message_count;
  summary["frames_not_tcp"] = m.frames_not_tcp;
  summary["frames_unsupported"] = m.frames_unsupported;
  summary["frames_malformed"] = m.frames_malformed;
  return summary;
}

// `v` as dump(2) shows it, nested `indent` spaces deep: its lines after the first indented (a
// dumped value has no newline but between lines: strings escape theirs).
void put(std::ostream& out, const json& v, int indent) {
  const std::string text = v.dump(2);
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::size_t from = 0;
  for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
    out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from)) << pad;
  out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

// A member of the top-level object: `  "key": value`, after a comma unless it is the first.
void put_member(std::ostream& out, bool& first, const char* key, const json& v) {
  out << (first ? "" : ",\n") << "  \"" << key << "\": ";
  first = false;
  put(out, v, 2);
}

// A top-level array written item by item: `item(i)` is called for each i < n, one at a time.
template <class Item>
void put_array(std::ostream& out, bool& first, const char* key, std::size_t n, Item item) {
  out << (first ? "" : ",\n") << "  \"" << key << "\": ";
  first = false;
  if (n == 0) {
    out << "[]";
    return;
  }
  out << "[\n";
  for (std::size_t i = 0; i < n; ++i) {
    out << (i ? ",\n" : "") << "    ";
    put(out, item(i), 4);
  }
  out << "\n  ]";
}

}  // namespace

// One document, as dumping one nlohmann::json object with dump(2) wrote it (its keys in
// nlohmann's sorted order, the same indentation), but written as it goes: a finding, a stream
// at a time, so a report of many findings is never held whole in memory.
void write_json(std::ostream& out, const Model& m, const std::string& capture_name,
                const Timing* timing) {
  // Regions grouped by the stream they belong to; regions with no stream go top-level.
  std::map<std::uint32_t, json> stream_regions;
  json other_regions = json::array();
  for (const auto& [key, b] : m.memory.buffers()) {
    if (b.stream) {
      stream_regions[*b.stream].push_back(region_json(b));
    } else {
      if (!b.placing_streams().empty())
        stream_regions[b.placing_streams().front()].push_back(region_json(b));
      else
        other_regions.push_back(region_json(b));
    }
  }
  std::vector<const StreamModel*> streams;
  for (const auto& s : m.streams)
    if (s.state != StreamState::not_iwarp && s.state != StreamState::unknown) streams.push_back(&s);
  bool first = true;
  out << "{\n";
  put_member(out, first, "capture", capture_name);
  put_array(out, first, "findings", m.findings.size(),
            [&](std::size_t i) { return finding_json(m, m.findings[i]); });
  if (m.findings_dropped) put_member(out, first, "findings_dropped", m.findings_dropped);
  put_member(out, first, "frames", m.frames);
  if (!other_regions.empty()) put_member(out, first, "regions", other_regions);
  put_member(out, first, "schema", kSchemaVersion);
  if (m.sink_profile)
    put_member(out, first, "sink_profile", std::string(to_string(*m.sink_profile)));
  put_array(out, first, "streams", streams.size(), [&](std::size_t i) {
    auto it = stream_regions.find(streams[i]->id);
    return stream_json(*streams[i],
                       it == stream_regions.end() ? json::array() : std::move(it->second),
                       m.esp_analysed);
  });
  put_member(out, first, "summary", summary_json(m));
  if (timing) put_member(out, first, "timing", timing_json(*timing));
  out << "\n}";
}

void write_finding_line(std::ostream& out, const Model& m, const Finding& f) {
  out << "  frame " << std::setw(7) << f.frame << "  " << std::left << std::setw(8)
      << to_string(f.severity) << std::setw(34) << f.code() << std::right;
  if (f.stream != UINT32_MAX) {
    out << " stream " << f.stream;
    if (const DirectionModel* dm = direction_of(m, f))
      out << " " << dm->from.to_string() << " \u2192 " << dm->to.to_string();
    out << ": ";
  }
  out << f.message;
  // Every finding but rdmap.terminate: the Terminate a compliant Data Sink sends for the rule
  // broken. rdmap.terminate's message already names the one the peer sent ("peer sent
  // Terminate: ..."): said once.
  if (f.outcome && (m.sink_profile || *f.outcome != SinkOutcome::terminate)) {
    // The named profile's Data Sink, and RFC's where it does otherwise.
    const std::string who(m.sink_profile ? to_string(*m.sink_profile) : "sink");
    out << "  ["
        << (who == "rfc"    ? "an RFC sink"
            : who == "sink" ? "a compliant sink"
                            : who)
        << " ";
    switch (*f.outcome) {
      case SinkOutcome::terminate:
        out << "sends Terminate " << (f.terminate ? terminate_error_name(*f.terminate) : "");
        break;
      case SinkOutcome::close:
        out << "closes the connection without a Terminate";
        break;
      case SinkOutcome::wait:
        out << "sends nothing and waits for more octets";
        break;
      case SinkOutcome::accept:
        out << "accepts it and goes on";
        break;
      case SinkOutcome::reject:
        out << "answers with an MPA Reply that rejects (R = 1)";
        break;
    }
    if (f.rfc_terminate || (f.outcome != SinkOutcome::terminate && f.terminate))
      out << "; an RFC sink sends Terminate "
          << terminate_error_name(f.rfc_terminate ? *f.rfc_terminate : *f.terminate);
    out << "]";
  } else if (f.terminate && f.id != FindingId::rdmap_terminate) {
    out << "  [sink would send Terminate " << terminate_error_name(*f.terminate) << "]";
  }
  if (m.sink_profile && f.matches) {
    std::string names;
    for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw})
      if (*f.matches & (1u << static_cast<unsigned>(p)))
        names += (names.empty() ? "" : " and ") + std::string(to_string(p));
    out << (names.empty() ? "  (matches no profile's prediction)"
                          : "  (matches the " + names + " profile" +
                                (names.find(" and ") != std::string::npos ? "s" : "") + ")");
  }
  if (f.consequence_of == Consequence::gap) out << "  (consequence of capture loss)";
  if (f.consequence_of == Consequence::crc) out << "  (consequence of an FPDU dropped for its CRC)";
  out << "\n";
}

void write_text(std::ostream& out, const Model& m, const std::string& capture_name,
                const Timing* timing) {
  out << "ddpscope report: " << capture_name << " (" << m.frames << " frames)\n";
  if (m.sink_profile) {
    out << "Data Sink profile: " << to_string(*m.sink_profile) << " ("
        << sink_profile_description(*m.sink_profile) << ")\n";
  }
  std::size_t shown = 0;
  for (const auto& s : m.streams) {
    if (s.state == StreamState::not_iwarp || s.state == StreamState::unknown) continue;
    ++shown;
    out << "\nStream " << s.id << ": " << s.client.to_string() << " -> " << s.server.to_string()
        << "  [" << to_string(s.state) << "] frames " << s.first_frame << "-" << s.last_frame
        << "\n";
    if (!s.ulp.empty()) out << "  ULP: " << s.ulp << " (" << s.ulp_detail << ")\n";
    if (m.esp_analysed) {
      const auto& c = s.dirs[0].esp;
      const auto& r = s.dirs[1].esp;
      if (!c && !r) {
        out << "  IPsec: none (in the clear)\n";
      } else {
        const EspProtection& any = c ? *c : *r;
        out << "  IPsec: ESP " << any.mode << ", SPI c->s " << (c ? spi_hex(c->spi) : "-")
            << " s->c " << (r ? spi_hex(r->spi) : "-") << ", " << any.encryption << " / "
            << any.integrity << (any.esn ? ", ESN" : "") << (any.udp_encap ? ", UDP 4500" : "")
            << (c && r ? "" : " (one direction only)") << "\n";
      }
    }
    if (s.llp == Llp::sctp && s.sctp) {
      const SctpStreamInfo& x = *s.sctp;
      out << "  SCTP: stream " << x.stream_id << ", ports " << x.ports[0] << "/" << x.ports[1]
          << ", vtags " << hex_word(x.vtags[0]) << "/" << hex_word(x.vtags[1])
          << (x.adaptation ? ", DDP adaptation indicated" : ", no adaptation indication seen")
          << (x.over_udp ? ", over UDP" : "");
      if (s.mid_stream) out << ", mid-stream (no setup in capture)";
      if (s.peer_to_peer) out << ", peer-to-peer";
      if (!s.rtr.empty()) out << ", RTR " << s.rtr;
      out << "\n";
      for (const SctpSessionRecord& r : x.session) {
        const std::string_view name = wire::ddp_session_function_name(r.message.function_code);
        out << "    frame " << r.frame << " " << dir_name(r.direction) << ": "
            << (name.empty() ? std::string("unknown function code") : std::string(name)) << ", "
            << r.message.private_data.size() << " octets of private data\n";
      }
    } else {
      out << "  MPA: ";
      if (s.mid_stream) out << "mid-stream (no handshake in capture) ";
      if (s.revision) out << "rev " << int(*s.revision) << " ";
      out << "CRC " << ((s.dirs[0].mpa.crc || s.dirs[1].mpa.crc) ? "on" : "off");
      out << ", markers c->s " << (s.dirs[0].mpa.markers ? "on" : "off") << ", s->c "
          << (s.dirs[1].mpa.markers ? "on" : "off");
      if (s.enhanced) {
        out << ", RFC 6581";
        if (s.dirs[0].mpa_frame && s.dirs[0].mpa_frame->enhanced_pd)
          out << " client IRD/ORD " << s.dirs[0].mpa_frame->enhanced_pd->ird << "/"
              << s.dirs[0].mpa_frame->enhanced_pd->ord;
        if (s.dirs[1].mpa_frame && s.dirs[1].mpa_frame->enhanced_pd)
          out << " server IRD/ORD " << s.dirs[1].mpa_frame->enhanced_pd->ird << "/"
              << s.dirs[1].mpa_frame->enhanced_pd->ord;
        if (s.peer_to_peer) out << ", peer-to-peer";
        if (!s.rtr.empty()) out << ", RTR " << s.rtr;
      }
      out << "\n";
    }
    for (int d = 0; d < 2; ++d) {
      const auto& dm = s.dirs[d];
      if (s.llp == Llp::sctp) {
        out << "  " << dir_name(d) << ": " << dm.sctp_messages << " SCTP user messages in "
            << dm.sctp_chunks << " DATA chunks, " << dm.bytes_placed << " octets placed";
      } else {
        out << "  " << dir_name(d) << ": " << dm.tcp_bytes << " TCP octets, " << dm.fpdus
            << " FPDUs, " << dm.bytes_placed << " octets placed";
      }
      if (dm.bytes_lost) out << ", " << dm.bytes_lost << " lost";
      if (dm.crc_errors)
        out << ", " << dm.crc_errors << (dm.crc_errors == 1 ? " CRC error" : " CRC errors");
      out << "\n";
      for (std::size_t op = 0; op < dm.opcodes.size(); ++op) {
        const auto& c = dm.opcodes[op];
        if (!c.segments) continue;
        out << "    " << std::left << std::setw(28)
            << wire::opcode_info(static_cast<std::uint8_t>(op)).name << std::right << std::setw(8)
            << c.segments << (c.segments == 1 ? " segment  " : " segments ") << std::setw(8)
            << c.messages << (c.messages == 1 ? " message  " : " messages ") << std::setw(12)
            << c.bytes << (c.bytes == 1 ? " octet\n" : " octets\n");
      }
      for (const auto& [qn, q] : dm.queues) {
        out << "    QN " << qn << ": MSN " << q.first_msn << ".." << q.last_msn << ", "
            << q.messages << (q.messages == 1 ? " message\n" : " messages\n");
      }
    }
    bool header = false;
    for (const auto& [key, b] : m.memory.buffers()) {
      const auto& placing = b.placing_streams();
      const bool mine = b.stream ? *b.stream == s.id
                                 : std::find(placing.begin(), placing.end(), s.id) != placing.end();
      if (!mine) continue;
      if (!header) {
        out << "  STag regions:\n";
        header = true;
      }
      out << "    " << b.key.owner.to_string() << " STag " << stag_hex(b.key.stag) << " ["
          << to_string(b.source) << "]";
      if (b.base && b.length) out << " base " << hex(*b.base) << " length " << *b.length;
      if (!b.command.empty()) {
        out << " " << b.command;
        if (b.ulp_access)
          out << " ("
              << ((*b.ulp_access & ddp::access::remote_read) &&
                          (*b.ulp_access & ddp::access::remote_write)
                      ? "remote read and write"
                  : (*b.ulp_access & ddp::access::remote_read) ? "remote read"
                                                               : "remote write")
              << ")";
      }
      if (b.extents().empty()) {
        out << ": nothing placed\n";
        continue;
      }
      out << ": " << b.bytes_placed() << (b.bytes_placed() == 1 ? " octet" : " octets")
          << " placed in";
      std::size_t n = 0;
      for (const auto& [begin, end] : b.extents()) {
        if (n++ == 4) {
          out << " ...";
          break;
        }
        out << " [" << hex(begin) << ", " << hex(end) << ")";
      }
      if (b.overwrites())
        out << "; reused: " << b.reused_octets() << (b.reused_octets() == 1 ? " octet" : " octets")
            << " rewritten by " << b.overwrites()
            << (b.overwrites() == 1 ? " later segment" : " later segments");
      if (b.conflicts())
        out << "; " << b.conflicts()
            << (b.conflicts() == 1 ? " conflicting placement" : " conflicting placements");
      out << "\n";
    }
  }
  if (shown == 0)
    out << "\nNo iWARP stream found (no MPA handshake; use --port for mid-stream captures).\n";
  out << "\nFindings: " << m.findings.size();
  if (m.findings_dropped) out << " (+" << m.findings_dropped << " not kept)";
  // By severity, the ones not kept included.
  const auto count = [&](Severity s, const char* one) {
    const std::uint64_t n = m.severity_counts[static_cast<std::size_t>(s)];
    return std::to_string(n) + " " + one + (n == 1 ? "" : "s");
  };
  out << " (" << count(Severity::error, "error") << ", " << count(Severity::warning, "warning")
      << ", " << count(Severity::note, "note") << ")\n";
  // In frame order (a finding raised at the end of the capture names an earlier frame); ties
  // keep the order they were raised in.
  std::vector<const Finding*> by_frame;
  by_frame.reserve(m.findings.size());
  for (const auto& f : m.findings)
    by_frame.push_back(&f);
  std::stable_sort(by_frame.begin(), by_frame.end(),
                   [](const Finding* a, const Finding* b) { return a->frame < b->frame; });
  for (const Finding* fp : by_frame)
    write_finding_line(out, m, *fp);
  if (timing) write_timing_text(out, m, *timing);
}

bool check_export_dir(const std::string& dir, std::string& error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    error = dir + " is not a directory";
    return false;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  // Writable: a probe file, created and removed (permissions alone do not tell, e.g. as root
  // on a read-only mount).
  const fs::path probe = fs::path(dir) / ".ddpscope-write-test";
  errno = 0;
  {
    std::ofstream out(probe, std::ios::binary);
    out << "x";
    out.flush();
    if (!out) {
      error = "cannot write in " + dir + ": " + std::strerror(errno ? errno : EACCES);
      fs::remove(probe, ec);
      return false;
    }
  }
  fs::remove(probe, ec);
  return true;
}

bool export_shadow_buffers(const Model& m, const std::string& dir, std::string& error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  json index = json::array();
  for (const auto& [key, b] : m.memory.buffers()) {
    if (b.extents().empty()) continue;
    std::string owner = key.owner.to_string();
    for (auto& ch : owner)
      if (ch == ':' || ch == '[' || ch == ']') ch = '_';
    const std::string name = owner + "-stag-" + stag_hex(key.stag) + ".bin";
    const std::uint64_t base = b.min_to();
    const std::uint64_t span = b.max_end() - base;
    json entry;
    entry["file"] = name;
    entry["sink"] = key.owner.to_string();
    entry["stag"] = stag_hex(key.stag);
    entry["base_to"] = hex(base);
    entry["size"] = span;
    json ranges = json::array();
    for (const auto& [begin, end] : b.extents())
      ranges.push_back({hex(begin), hex(end)});
    entry["placed_ranges"] = ranges;
    entry["bytes_placed"] = b.bytes_placed();
    entry["content_complete"] = true;
    if (span > (1ull << 32)) {
      entry["skipped"] = "placed extent larger than 4 GiB";
      index.push_back(entry);
      continue;
    }
    std::ofstream out(fs::path(dir) / name, std::ios::binary);
    if (!out) {
      error = "cannot write " + (fs::path(dir) / name).string();
      return false;
    }
    constexpr std::size_t kChunk = 1 << 20;
    bool complete = true;
    for (std::uint64_t off = 0; off < span; off += kChunk) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, span - off));
      std::vector<bool> known;
      Bytes data = b.read(base + off, n, &known);
      out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(n));
      for (const auto& [begin, end] : b.extents()) {
        // Placed octets whose content was not retained (payload cap) make the file partial.
        const std::uint64_t lo = std::max(begin, base + off), hi = std::min(end, base + off + n);
        for (std::uint64_t p = lo; p < hi && complete; ++p)
          if (!known[p - base - off]) complete = false;
      }
    }
    out.flush();
    if (!out) {
      error = "cannot write " + (fs::path(dir) / name).string() + ": " +
              std::strerror(errno ? errno : EIO);
      return false;
    }
    entry["content_complete"] = complete;
    index.push_back(entry);
  }
  std::ofstream idx(fs::path(dir) / "index.json");
  if (!idx) {
    error = "cannot write index.json in " + dir;
    return false;
  }
  idx << index.dump(2) << "\n";
  idx.flush();
  if (!idx) {
    error = "cannot write index.json in " + dir + ": " + std::strerror(errno ? errno : EIO);
    return false;
  }
  return true;
}

}  // namespace ddpscope::report
