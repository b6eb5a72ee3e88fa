// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/synth/synth.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ddpscope/capture/file_writer.h"
#include "ddpscope/common/crc32c.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/net/packet.h"
#include "emitter.h"
#include "esp_wrap.h"
#include "generator.h"
#include "scenario.h"

namespace ddpscope::synth {
namespace {

using json = nlohmann::json;

std::string hex(std::uint64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<unsigned long long>(v));
  return buf;
}

// OUT.pcap -> OUT; anything else is kept whole.
std::string stem(const std::string& path) {
  const std::string ext = ".pcap";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size());
  return path;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool write_text(const std::string& path, const std::string& text, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

// The analyzer's --regions format: [{"stag":"0x…","base":"0x…","length":N,"sink":"IP"}].
json regions_json(const Scenario& s) {
  json arr = json::array();
  for (const auto& r : s.regions) {
    json e = {{"stag", hex(r.stag, 8)}, {"base", hex(r.base, 16)}, {"length", r.length}};
    if (r.sink) e["sink"] = r.sink->to_string();
    arr.push_back(e);
  }
  return arr;
}

}  // namespace

json expected_json(const SynthResult& result, const std::string& scenario_name,
                   const std::string& description, const std::string& pcap_name) {
  json doc;
  doc["generator"] = "ddpscope synth";
  doc["scenario"] = scenario_name;
  doc["description"] = description;
  doc["pcap"] = pcap_name;
  doc["frames"] = result.frames;
  doc["regions_file"] =
      result.regions_path.empty() ? json(nullptr) : json(base_name(result.regions_path));
  doc["exhaustive"] = result.exhaustive;
  if (!result.esp_sa_path.empty() && result.keys_given) {
    // What the analysis is given: the esp_sa table, or the xfrm state when the SAs use ESN.
    if (result.use_xfrm)
      doc["xfrm_file"] = base_name(result.xfrm_path);
    else
      doc["esp_sa_file"] = base_name(result.esp_sa_path);
    if (result.require_esp) doc["require_esp"] = true;
    if (result.require_confidentiality) doc["esp_policy"] = "confidentiality";
  }
  json exp = json::array();
  for (const auto& e : result.expected) {
    json x = {{"code", e.code}, {"frame", e.frame}};
    // A consequence of capture loss is reported as a note (tests/golden.py effective_severity).
    if (auto id = finding_by_code(e.code))
      x["severity"] = e.consequence ? "note" : to_string(finding_spec(*id).severity);
    if (e.consequence) x["consequence"] = true;
    if (e.op >= 0) x["op"] = e.op;
    if (!e.detail.empty()) x["detail"] = e.detail;
    exp.push_back(x);
  }
  doc["expected"] = exp;
  json regions = json::array();
  for (const auto& r : result.regions_written) {
    json x = {{"owner", r.owner},
              {"stag", hex(r.stag, 8)},
              {"base", hex(r.base, 16)},
              {"length", r.bytes.size()},
              {"crc32c", hex(crc32c(r.bytes), 8)}};
    if (r.bytes.size() <= 64) x["hex"] = to_hex(r.bytes);
    regions.push_back(x);
  }
  doc["regions_written"] = regions;
  return doc;
}

bool synthesize_json(const json& scenario, const std::string& out_path, SynthResult& result,
                     std::string& error) {
  Scenario s;
  if (!parse_scenario(scenario, s, error)) return false;
  Generated g;
  if (!generate(s, g, error)) return false;
  EspWrapped esp_sas;
  if (s.esp) {
    try {
      esp_sas = esp_wrap(s, g);
    } catch (const GenerateError& e) {
      error = e.what();
      return false;
    }
  }

  auto writer = capture::CaptureWriter::open(
      out_path, static_cast<std::uint32_t>(net::LinkType::ethernet), error);
  if (!writer) return false;
  for (const auto& f : g.frames)
    writer->write(f.ts_ns, f.data);
  if (!writer->close(error)) return false;

  SynthResult r;
  r.frames = g.frames.size();
  r.expected = std::move(g.expected);
  r.exhaustive = g.exhaustive;
  r.regions_written = std::move(g.regions_written);
  const std::string base = stem(out_path);
  r.expected_path = base + ".expected.json";
  if (!s.regions.empty()) {
    r.regions_path = base + ".regions.json";
    if (!write_text(r.regions_path, regions_json(s).dump(2) + "\n", error)) return false;
  }
  if (s.esp) {
    r.esp_sa_path = base + ".esp_sa";
    r.xfrm_path = base + ".xfrm";
    r.use_xfrm = s.esp->esn || s.esp->replay_window != 64;
    r.require_esp = s.esp->require_esp;
    r.keys_given = s.esp->keys_given;
    // Without keys nothing is placed: the analysis cannot see the data.
    if (!r.keys_given) r.regions_written.clear();
    r.require_confidentiality = s.esp->require_confidentiality;
    std::string sa_text =
        "# Wireshark ESP SA table (esp_sa in a Wireshark profile), written by ddpscope synth\n";
    std::string xfrm_text;
    for (std::size_t i = 0; i < esp_sas.sas.size(); ++i) {
      sa_text += esp::to_esp_sa_line(esp_sas.sas[i]) + "\n";
      xfrm_text +=
          esp::to_xfrm_state(esp_sas.sas[i], esp_sas.outer[i].first, esp_sas.outer[i].second);
    }
    if (!write_text(r.esp_sa_path, sa_text, error) || !write_text(r.xfrm_path, xfrm_text, error))
      return false;
  }
  const json doc = expected_json(r, s.name, s.description, base_name(out_path));
  if (!write_text(r.expected_path, doc.dump(2) + "\n", error)) return false;
  result = std::move(r);
  return true;
}

bool synthesize(const std::string& scenario_path, const std::string& out_path, SynthResult& result,
                std::string& error) {
  std::ifstream in(scenario_path, std::ios::binary);
  if (!in) {
    error = "cannot open scenario " + scenario_path;
    return false;
  }
  json j = json::parse(in, nullptr, false, true);  // comments allowed
  if (j.is_discarded()) {
    error = scenario_path + ": not valid JSON";
    return false;
  }
  return synthesize_json(j, out_path, result, error);
}

}  // namespace ddpscope::synth
