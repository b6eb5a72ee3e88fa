// SPDX-License-Identifier: GPL-2.0-or-later
// File › Capture…: interface (from libpcap's list, "lo" by default), capture filter checked as
// it is typed, an optional savefile, and mid-stream MPA hints as `ddpscope live --port`.
#pragma once

#include <QDialog>

#include "live_analysis.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace ddpscope::gui {

class CaptureDialog : public QDialog {
  Q_OBJECT
 public:
  explicit CaptureDialog(QWidget* parent = nullptr);

  // The request as entered (valid when the Start button is enabled).
  CaptureRequest request() const;
  void setRequest(const CaptureRequest& r);

  QComboBox* interfaceCombo() const { return interface_; }
  QLineEdit* filterEdit() const { return filter_; }
  QLabel* filterErrorLabel() const { return filter_error_; }
  QCheckBox* saveCheck() const { return save_; }
  QLineEdit* savePathEdit() const { return save_path_; }
  QLineEdit* portsEdit() const { return ports_; }
  QLineEdit* streamsEdit() const { return streams_; }
  QLineEdit* regionsEdit() const { return regions_; }
  QPushButton* startButton() const;

  void accept() override;  // remembers the choices for next time

 private:
  void validate();
  void browse();

  QComboBox* interface_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* filter_error_ = nullptr;
  QCheckBox* save_ = nullptr;
  QLineEdit* save_path_ = nullptr;
  QLineEdit* ports_ = nullptr;
  QLabel* ports_error_ = nullptr;
  QLineEdit* streams_ = nullptr;  // mid-stream endpoints, as --stream
  QLabel* streams_error_ = nullptr;
  QLineEdit* regions_ = nullptr;  // regions file, as --regions
  QComboBox* crc_ = nullptr;      // auto, on, off
  QCheckBox* markers_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
};

// "4420, 5000" -> ports; false when a token is not a port number 1..65535.
bool parsePorts(const QString& text, QList<quint16>& ports);
// "10.0.0.1:4420, [fe80::1]:5000" -> endpoints (as --stream); false naming the bad token.
bool parseEndpoints(const QString& text, std::vector<net::Endpoint>& out, QString* bad = nullptr);
QString endpointsText(const std::vector<net::Endpoint>& endpoints);

}  // namespace ddpscope::gui
