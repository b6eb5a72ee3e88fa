// SPDX-License-Identifier: GPL-2.0-or-later
#include "regions_file.h"

#include <QFileInfo>

#include "ddpscope/analysis/regions_file.h"

namespace ddpscope::gui {

bool loadRegionsFile(const QString& path, RegionsFile& out, QString* error) {
  std::string e;
  if (ddpscope::load_regions_file(path.toStdString(), out, e)) return true;
  if (error) *error = QString::fromStdString(e);
  return false;
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
