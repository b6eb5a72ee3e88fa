// SPDX-License-Identifier: GPL-2.0-or-later
// Captures the GUI tests run on (the rping capture and every sample in samples/), and the
// settings every GUI test keeps away from the user's.
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QSettings>
#include <QStringList>
#include <QTemporaryDir>

namespace ddpscope::gui::test {

inline QStringList sampleCaptures() {
  QStringList files;
  // samples/*.pcap and the folders below (samples/synthetic, samples/siw).
  QDirIterator it(qEnvironmentVariable("DDPSCOPE_SAMPLES_DIR"),
                  {QStringLiteral("*.pcap"), QStringLiteral("*.pcapng")}, QDir::Files,
                  QDirIterator::Subdirectories);
  while (it.hasNext())
    files << it.next();
  files.sort();
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

// QSettings (recent files, dialog choices) go to `dir`, not to the user's configuration.
inline void useTemporarySettings(const QTemporaryDir& dir) {
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
  QCoreApplication::setOrganizationName(QStringLiteral("ddpscope-test"));
}

}  // namespace ddpscope::gui::test
