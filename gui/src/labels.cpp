// SPDX-License-Identifier: GPL-2.0-or-later
#include "labels.h"

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::gui {

QString qstr(std::string_view s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

QString endpointText(const net::Endpoint& e) {
  return QString::fromStdString(e.to_string());
}

QString opcodeName(int opcode) {
  if (opcode < 0) return QStringLiteral("-");
  const auto& info = wire::opcode_info(static_cast<std::uint8_t>(opcode));
  if (info.name.empty()) return QStringLiteral("opcode 0x%1").arg(opcode, 0, 16);
  return qstr(info.name);
}

QString severityText(Severity s) {
  return qstr(to_string(s));
}

QString directionText(const StreamModel& s, int direction) {
  if (direction < 0 || direction > 1) return QStringLiteral("-");
  const auto& d = s.dirs[static_cast<std::size_t>(direction)];
  return QStringLiteral("%1 → %2").arg(endpointText(d.from), endpointText(d.to));
}

QString terminateText(const std::optional<TerminateError>& t) {
  if (!t) return {};
  // The triple first, so that a narrow column still shows it.
  return QStringLiteral("%1/%2/%3  %4")
      .arg(t->layer)
      .arg(t->etype, 0, 16)
      .arg(t->code, 2, 16, QLatin1Char('0'))
      .arg(QString::fromStdString(terminate_error_name(*t)));
}

QString terminateLongText(const TerminateError& t) {
  return QStringLiteral("layer %1, error type 0x%2, error code 0x%3 (%4)")
      .arg(t.layer)
      .arg(t.etype, 0, 16)
      .arg(t.code, 2, 16, QLatin1Char('0'))
      .arg(QString::fromStdString(terminate_error_name(t)));
}

QString stagText(std::uint32_t stag) {
  return QStringLiteral("0x%1").arg(stag, 8, 16, QLatin1Char('0'));
}

QString regionLabel(const ShadowBuffer& buf) {
  return QStringLiteral("STag %1 @ %2")
      .arg(stagText(buf.key.stag), QString::fromStdString(buf.key.owner.to_string()));
}

QString bytesText(std::uint64_t n) {
  if (n < 1024) return QStringLiteral("%1 B").arg(n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(QLatin1String(units[u]));
}

QString messageText(const Model& m, const MessageRecord& r) {
  const QString what = QStringLiteral("%1, %2 in %3 seg.")
                           .arg(opcodeName(r.opcode), bytesText(r.length))
                           .arg(r.segments);
  const std::string_view ulp = m.ulp_name(r);
  return ulp.empty() ? what : QStringLiteral("%1 — %2").arg(qstr(ulp), what);
}

QColor severityColor(Severity s) {
  switch (s) {
    case Severity::error:
      return QColor(0xd3, 0x2f, 0x2f);
    case Severity::warning:
      return QColor(0xe6, 0x8a, 0x00);
    case Severity::note:
      return QColor(0x1e, 0x88, 0xe5);
  }
  return {};
}

QColor opcodeColor(int opcode) {
  if (opcode < 0) return QColor(0x90, 0x90, 0x90);
  // Golden-angle hues: neighbouring opcodes get far-apart colours.
  const int hue = (opcode * 137 + 200) % 360;
  return QColor::fromHsv(hue, 150, 210);
}

QColor spanColor(SpanKind kind) {
  switch (kind) {
    case SpanKind::rewritten:
      return QColor(0x00, 0x89, 0x7b);  // teal: normal reuse, not an issue colour
    case SpanKind::overlap:
      return QColor(0xff, 0xc1, 0x07);  // amber
    case SpanKind::conflict:
      return QColor(0xff, 0x57, 0x22);  // deep orange
    case SpanKind::violation:
      return QColor(0xd5, 0x00, 0x00);  // red
    default:
      return QColor(0x90, 0x90, 0x90);
  }
}

}  // namespace ddpscope::gui
