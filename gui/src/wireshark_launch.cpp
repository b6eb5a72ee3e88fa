// SPDX-License-Identifier: GPL-2.0-or-later
#include "wireshark_launch.h"

#include <QFileInfo>
#include <QStandardPaths>

namespace ddpscope::gui {

QStringList wiresharkArguments(const WiresharkRequest& r) {
  QStringList args{QStringLiteral("-r"), r.capture};
  if (r.frame > 0) args << QStringLiteral("-g") << QString::number(r.frame);
  if (!r.regions_file.isEmpty())
    args << QStringLiteral("-o")
         << QStringLiteral("iwarp.mpa.regions_file:%1")
                .arg(QFileInfo(r.regions_file).absoluteFilePath());
  if (r.sink_profile)
    args << QStringLiteral("-o")
         << QStringLiteral("iwarp.mpa.sink_profile:%1")
                .arg(*r.sink_profile == SinkProfile::siw ? QStringLiteral("siw")
                                                         : QStringLiteral("rfc"));
  if (!r.ports.isEmpty()) {
    for (const quint16 p : r.ports)
      args << QStringLiteral("-d") << QStringLiteral("tcp.port==%1,iwarp.mpa").arg(p);
    args << QStringLiteral("-o")
         << QStringLiteral("iwarp.mpa.midstream_crc:%1")
                .arg(!r.crc ? QStringLiteral("auto")
                            : (*r.crc ? QStringLiteral("true") : QStringLiteral("false")));
    args << QStringLiteral("-o")
         << QStringLiteral("iwarp.mpa.midstream_markers:%1")
                .arg(r.markers ? QStringLiteral("TRUE") : QStringLiteral("FALSE"));
  }
  return args;
}

QString findWireshark() {
  // DDPSCOPE_WIRESHARK names the program to run (another build, or none when it is not one).
  if (qEnvironmentVariableIsSet("DDPSCOPE_WIRESHARK")) {
    const QFileInfo chosen(qEnvironmentVariable("DDPSCOPE_WIRESHARK"));
    return chosen.isFile() && chosen.isExecutable() ? chosen.absoluteFilePath() : QString();
  }
  QString path = QStandardPaths::findExecutable(QStringLiteral("wireshark"));
  if (path.isEmpty())
    path = QStandardPaths::findExecutable(
        QStringLiteral("wireshark"),
        {QStringLiteral("/usr/bin"), QStringLiteral("/usr/local/bin")});
  return path;
}

}  // namespace ddpscope::gui
