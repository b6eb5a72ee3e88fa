// SPDX-License-Identifier: GPL-2.0-or-later
// Captures the GUI tests run on: the rping capture and every sample in samples/.
#pragma once

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QStringList>

namespace ddpscope::gui::test {

inline QStringList sampleCaptures() {
  QStringList files;
  const QDir samples(qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR"));
  for (const QString& f : samples.entryList({QStringLiteral("*.pcap"), QStringLiteral("*.pcapng")},
                                            QDir::Files, QDir::Name))
    files << samples.filePath(f);
  return files;
}

inline QStringList allCaptures() {
  QStringList files;
  const QString rping =
      qEnvironmentVariable("DDPSCOPE_SHARED_CAPTURES") + QStringLiteral("/softuiwarp-rping.pcap");
  if (QFileInfo::exists(rping)) files << rping;
  files << sampleCaptures();
  return files;
}

}  // namespace ddpscope::gui::test
