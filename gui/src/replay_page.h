// SPDX-License-Identifier: GPL-2.0-or-later
// The Replay page (issue 41): one stream of the open capture replayed against a live peer by
// `ddpscope replay --json` (a child process: the GUI opens no sockets), with the command line's
// options, and its differences listed one per line; choosing a line focuses the captured frame
// of the message that differed.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProcess;
class QPushButton;
class QSpinBox;
class QTreeWidget;
class QTreeWidgetItem;

namespace ddpscope::gui {

class ReplayPage : public QWidget {
  Q_OBJECT

 public:
  explicit ReplayPage(QWidget* parent = nullptr);
  ~ReplayPage() override;

  // The capture the replay reads (the open file; empty for a live capture, which has none yet)
  // and how many streams its analysis found.
  void setCapture(const QString& path, int streams);
  // The stream chosen elsewhere (the Streams page).
  void setStream(int stream);
  // The ddpscope binary; default: beside this program, else from PATH.
  void setProgram(const QString& program) { program_ = program; }
  QString program() const;
  // What Replay runs: `replay CAPTURE ... --json` with the form's options.
  QStringList arguments() const;
  // Starts the replay (the Replay button); false with the status saying why when the form is
  // incomplete or a replay is running.
  bool start();
  bool isRunning() const;
  // Ends a running replay (the Stop button, a new capture, the page's end).
  void stop();

  QLineEdit* peerEdit() const { return peer_; }
  QComboBox* sideCombo() const { return side_; }
  QComboBox* llpCombo() const { return llp_; }
  QSpinBox* streamSpin() const { return stream_; }
  QSpinBox* waitSpin() const { return wait_ms_; }
  QSpinBox* udpPortSpin() const { return udp_port_; }
  QSpinBox* peerUdpPortSpin() const { return peer_udp_port_; }
  QLineEdit* ignoreEdit() const { return ignore_; }
  QLineEdit* faultEdit() const { return fault_; }
  QTreeWidget* differencesView() const { return tree_; }
  QString statusText() const;

 signals:
  void frameChosen(quint64 frame);
  void replayFinished();

 private:
  void processFinished(int exitCode);
  void showResult(const QByteArray& json, int exitCode);
  void updateState();

  QString capture_;
  QString program_;
  QSpinBox* stream_ = nullptr;
  QCheckBox* all_streams_ = nullptr;
  QComboBox* side_ = nullptr;
  QLineEdit* peer_ = nullptr;
  QComboBox* llp_ = nullptr;
  QComboBox* sctp_stack_ = nullptr;
  QSpinBox* udp_port_ = nullptr;
  QSpinBox* peer_udp_port_ = nullptr;
  QLineEdit* ignore_ = nullptr;
  QLineEdit* fault_ = nullptr;
  QSpinBox* wait_ms_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QLabel* status_ = nullptr;
  QTreeWidget* tree_ = nullptr;
  QProcess* process_ = nullptr;
};

}  // namespace ddpscope::gui
