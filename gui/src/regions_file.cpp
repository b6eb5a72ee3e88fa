// SPDX-License-Identifier: GPL-2.0-or-later
#include "regions_file.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ddpscope::gui {
namespace {

bool number(const QJsonValue& v, std::uint64_t& out) {
  if (v.isDouble()) {
    if (v.toDouble() < 0) return false;
    out = static_cast<std::uint64_t>(v.toInteger());
    return true;
  }
  if (!v.isString()) return false;
  bool ok = false;
  const QString s = v.toString().trimmed();
  out = s.startsWith(QLatin1String("0x"), Qt::CaseInsensitive) ? s.mid(2).toULongLong(&ok, 16)
                                                               : s.toULongLong(&ok, 10);
  return ok;
}

}  // namespace

bool loadRegionsFile(const QString& path, std::vector<RegionSpec>& out, QString* error) {
  auto fail = [&](const QString& e) {
    if (error) *error = path + QStringLiteral(": ") + e;
    return false;
  };
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return fail(f.errorString());
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
  if (pe.error != QJsonParseError::NoError) return fail(pe.errorString());
  if (!doc.isArray())
    return fail(QStringLiteral("expected a JSON array of {stag, base, length, sink}"));
  std::vector<RegionSpec> regions;
  const QJsonArray a = doc.array();
  for (int i = 0; i < a.size(); ++i) {
    const QJsonObject o = a[i].toObject();
    const QString where = QStringLiteral("[%1]: ").arg(i);
    RegionSpec r;
    std::uint64_t stag = 0;
    if (!number(o.value(QStringLiteral("stag")), stag) || stag > 0xFFFFFFFFu)
      return fail(where + QStringLiteral("missing or invalid \"stag\""));
    r.stag = static_cast<std::uint32_t>(stag);
    if (!number(o.value(QStringLiteral("base")), r.base))
      return fail(where + QStringLiteral("missing or invalid \"base\""));
    if (!number(o.value(QStringLiteral("length")), r.length))
      return fail(where + QStringLiteral("missing or invalid \"length\""));
    if (o.contains(QStringLiteral("sink"))) {
      r.owner = net::Address::parse(o.value(QStringLiteral("sink")).toString().toStdString());
      if (!r.owner) return fail(where + QStringLiteral("invalid \"sink\" address"));
    }
    r.origin = "regions file";
    regions.push_back(std::move(r));
  }
  out.insert(out.end(), regions.begin(), regions.end());
  return true;
}

QString sidecarRegionsFile(const QString& capture) {
  const QFileInfo fi(capture);
  QString base = fi.filePath();
  for (const char* ext : {".pcapng", ".pcap", ".cap"})
    if (base.endsWith(QLatin1String(ext), Qt::CaseInsensitive)) {
      base.chop(qsizetype(qstrlen(ext)));
      break;
    }
  const QString side = base + QStringLiteral(".regions.json");
  return QFileInfo::exists(side) ? side : QString();
}

}  // namespace ddpscope::gui
